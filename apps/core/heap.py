"""The cyclic garbage collector of a long-lived hub process, settled once the process has loaded
what it keeps (a web server once it serves, a Celery worker once it is ready).

CPython's collector walks every tracked container of the generations it collects. A hub process
holds 200,000–290,000 of them once Django, its URLconf, DRF and the LLM SDKs are loaded, nearly all
kept for the process's life, and the default thresholds (700, 10, 10) walked them all again on
every full collection and the newest of them on every young one. Measured in `benchmarks/runs.py`'s
burst (100 runs started together and followed, production shape, 2 cores, slow machine): during the
~6 s burst the web process spent 340–520 ms of its ~2,000 ms CPU collecting (one full collection
of 233k objects alone 210–280 ms, a pause every request waits out) and the worker 300 of 3,000 ms.
Settled (frozen, young threshold 20,000), two runs: web 43 / 67 ms, worker 70 / 21 ms, no full
collection; frozen with the default threshold: web 204 / 162 ms, worker 94 / 79 ms.

`settle()`: one collection of what start-up left behind, then `gc.freeze()` moves every surviving
object to the permanent generation, which no collection walks; collections then see only what the
process allocated since. Frozen objects still die by reference counting; only a reference cycle
made entirely of start-up objects would outlive its use (there is none we keep making). The young
generation's threshold is raised so that the collector runs every `YOUNG_THRESHOLD` net
allocations instead of 700 (a request allocates a few thousand containers), and so the older
generations, counted in young collections, ~14 times less often. A young collection of 10,000
containers takes ~7 ms on that machine (20,000: ~15 ms, a pause a request would notice).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Collect once, freeze what is left, collect the young generation less often. Call it from
    the long-lived process itself once it has imported and built what it keeps; calling it again
    later freezes what has been added since."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
