"""The key proxy's stream scrubber: however a reply is cut into reads, the key never survives."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from wfbench.adapters.gateway.key_proxy import Scrubber

KEY = "sk-ant-key-aaab"
# Bytes near the key's own (repeats of its prefix) make the held-back tail matter.
pieces = st.lists(
    st.sampled_from(["sk-", "ant-", "key-", "a", "aab", "b", "x", "\n\n", KEY, "sk-ant-key-aa"])
)


def run(scrubber: Scrubber, cuts: list[bytes]) -> bytes:
    return b"".join(scrubber.feed(cut) for cut in cuts) + scrubber.finish()


@given(pieces, st.data())
@example(["sk-ant-key-aa", "aab"], None)
def test_any_cut_of_a_stream_scrubs_like_the_whole_stream(parts, data):
    """Feeding a reply in any cuts gives exactly ``reply.replace(key, mask)``: nothing lost or added."""
    whole = "".join(parts).encode()
    if data is None:
        cuts = [part.encode() for part in parts]
    else:
        points = sorted(data.draw(st.lists(st.integers(0, len(whole)), max_size=6)))
        cuts = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)]
    scrubber = Scrubber(KEY)
    mask = scrubber.text(KEY).encode()
    assert run(scrubber, cuts) == whole.replace(KEY.encode(), mask)


def test_the_mask_has_the_keys_length_and_says_redacted():
    """Same length (Content-Length stays true), and a reader sees why."""
    mask = Scrubber(KEY).text(f"x {KEY} y")
    assert mask == "x [REDACTED]***** y"
    assert len(mask) == len(f"x {KEY} y")


def test_bytes_that_cannot_start_the_key_pass_at_once():
    """An SSE event ending in a blank line is emitted whole: nothing is held back."""
    scrubber = Scrubber(KEY)
    assert scrubber.feed(b"event: ping\ndata: {}\n\n") == b"event: ping\ndata: {}\n\n"
    assert scrubber.feed(b"data: sk-ant") == b"data: "
    assert scrubber.finish() == b"sk-ant"
