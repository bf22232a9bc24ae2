#!/bin/bash
set -euo pipefail
printf '#!/bin/sh\necho "Hello, $1!"\n' > /app/greet.sh
