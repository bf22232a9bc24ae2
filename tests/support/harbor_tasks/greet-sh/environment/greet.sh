#!/bin/sh
echo "Hello, $NAME!"
