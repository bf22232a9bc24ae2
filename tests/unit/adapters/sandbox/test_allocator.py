"""The harness's C allocator settings (:mod:`wfbench.adapters.sandbox.allocator`), on a fake libc."""

from __future__ import annotations

import attrs
import pytest

from wfbench.adapters.sandbox import allocator


@attrs.define
class FakeLibc:
    """Records the ``mallopt`` and ``malloc_trim`` calls it is given."""

    calls: list[tuple[str, tuple[int, ...]]] = attrs.field(factory=list)

    def mallopt(self, option: int, value: int) -> int:
        self.calls.append(("mallopt", (option, value)))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", (pad,)))
        return 1


def test_the_arenas_are_capped_through_mallopt() -> None:
    libc = FakeLibc()

    assert allocator.cap_arenas(environ={}, libc=libc)
    assert libc.calls == [("mallopt", (allocator.M_ARENA_MAX, allocator.ARENA_LIMIT))]


def test_an_arena_limit_the_user_set_in_the_environment_is_left_alone() -> None:
    libc = FakeLibc()

    assert not allocator.cap_arenas(environ={"MALLOC_ARENA_MAX": "8"}, libc=libc)
    assert libc.calls == []


def test_free_memory_is_given_back_through_malloc_trim() -> None:
    libc = FakeLibc()

    assert allocator.release_free_memory(libc=libc)
    assert libc.calls == [("malloc_trim", (0,))]


def test_on_glibc_the_real_malloc_trim_is_found_and_called() -> None:
    if allocator._glibc() is None:
        pytest.skip("this C library is not glibc (no malloc_trim)")

    assert allocator.release_free_memory()
