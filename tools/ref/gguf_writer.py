"""Minimal GGUF v3 writer and reader (numpy only), written from the container
description in the project spec (docs/formats/gguf.md section 2, 9.1).

Why our own: the reference tools must not depend on the `gguf` pip package,
and writing the container ourselves lets the tests pin down every byte the C
loader has to accept (typed KVs, string/int/float arrays, F32/F16/Q8_0
payloads, 32-byte alignment).

Usage:
    w = GGUFWriter()
    w.add_string("general.architecture", "whisper")
    w.add_uint32("stt.whisper.encoder.n_layers", 2)
    w.add_array("tokenizer.ggml.tokens", ["a", "b"])           # STRING array
    w.add_array("stt.whisper.suppress_tokens", [1, 2], INT32)  # typed array
    w.add_tensor("enc.conv.0.bias", np_array, GGML_F32)        # PyTorch order
    w.write("out.gguf")

    kv, tensors = read_gguf("out.gguf")   # tensors: name -> (type, ne, ndarray)
"""

import struct

import numpy as np

# GGUF value types (docs/formats/gguf.md section 2)
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)

_SCALAR_FMT = {
    UINT8: "<B",
    INT8: "<b",
    UINT16: "<H",
    INT16: "<h",
    UINT32: "<I",
    INT32: "<i",
    FLOAT32: "<f",
    BOOL: "<?",
    UINT64: "<Q",
    INT64: "<q",
    FLOAT64: "<d",
}

# ggml tensor types (docs/formats/gguf.md section 9.1); block size, bytes per block
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
_TYPE_INFO = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_Q8_0: (32, 34)}
TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q8_0: "Q8_0"}

ALIGNMENT = 32

# Bulk tokenizer arrays go last in the KV section, as the upstream writers do.
_BULK_KEYS = [
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.scores",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.merges",
    "tokenizer.chat_template",
]


def _gguf_str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def quantize_q8_0(x):
    """Row-wise Q8_0 of a float array whose last axis is a multiple of 32.

    Block layout (34 bytes): d as f16, then 32 int8 quants; value = q * d with
    d = amax / 127 (ggml's reference quantizer, round-to-nearest)."""
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / np.float32(127.0)).astype(np.float32)
    inv = np.where(d > 0, np.float32(1.0) / np.where(d > 0, d, np.float32(1.0)), np.float32(0.0))
    v = x * inv[:, None].astype(np.float32)
    q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -128, 127).astype(np.int8)  # roundf: half away from 0
    out = np.empty((x.shape[0], 34), dtype=np.uint8)
    out[:, 0:2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def dequantize_q8_0(raw, n):
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(-1)[:n]


class GGUFWriter:
    def __init__(self):
        self.kv = []  # (key, value_type, payload bytes)
        self.tensors = []  # (name, ne list, ggml type, payload bytes)

    # --- metadata ---------------------------------------------------------
    def _add(self, key, vtype, payload):
        if any(k == key for k, _, _ in self.kv):
            raise ValueError("duplicate key " + key)
        self.kv.append((key, vtype, payload))

    def add_scalar(self, key, vtype, value):
        if vtype == STRING:
            self._add(key, STRING, _gguf_str(value))
        else:
            self._add(key, vtype, struct.pack(_SCALAR_FMT[vtype], value))

    def add_uint32(self, key, v):
        self.add_scalar(key, UINT32, v)

    def add_int32(self, key, v):
        self.add_scalar(key, INT32, v)

    def add_float32(self, key, v):
        self.add_scalar(key, FLOAT32, v)

    def add_bool(self, key, v):
        self.add_scalar(key, BOOL, bool(v))

    def add_string(self, key, v):
        self.add_scalar(key, STRING, v)

    def add_array(self, key, values, elem_type=None):
        """Typed like the `gguf` package when elem_type is None: str -> STRING,
        int -> INT32, float -> FLOAT32 (docs/formats/gguf.md section 2.1)."""
        values = list(values)
        if elem_type is None:
            if not values:
                raise ValueError("cannot infer type of empty array " + key)
            v0 = values[0]
            elem_type = STRING if isinstance(v0, str) else FLOAT32 if isinstance(v0, float) else INT32
        if elem_type == STRING:
            body = b"".join(_gguf_str(v) for v in values)
        else:
            fmt = _SCALAR_FMT[elem_type]
            body = b"".join(struct.pack(fmt, v) for v in values)
        self._add(key, ARRAY, struct.pack("<IQ", elem_type, len(values)) + body)

    # --- tensors ----------------------------------------------------------
    def add_tensor(self, name, arr, ggml_type):
        """arr in PyTorch order; stored with ne = reversed shape, same bytes."""
        arr = np.ascontiguousarray(arr)
        ne = list(reversed(arr.shape)) or [1]
        if ggml_type == GGML_F32:
            payload = arr.astype("<f4").tobytes()
        elif ggml_type == GGML_F16:
            payload = arr.astype("<f2").tobytes()
        elif ggml_type == GGML_Q8_0:
            if ne[0] % 32:
                raise ValueError(name + ": ne[0] not a multiple of 32 for Q8_0")
            payload = quantize_q8_0(arr)
        else:
            raise ValueError("unsupported ggml type %d" % ggml_type)
        if any(t[0] == name for t in self.tensors):
            raise ValueError("duplicate tensor " + name)
        self.tensors.append((name, ne, ggml_type, payload))

    def add_tensor_lazy(self, name, shape, ggml_type, producer):
        """Like add_tensor, but producer() returns the array only when
        write_stream() reaches it (files too big to hold twice in memory).
        F32 / F16 / Q8_0; a writer with lazy tensors must use write_stream()."""
        if ggml_type not in (GGML_F32, GGML_F16, GGML_Q8_0):
            raise ValueError("lazy tensors support F32 / F16 / Q8_0 only")
        if ggml_type == GGML_Q8_0 and (tuple(shape)[-1] if shape else 1) % 32:
            raise ValueError(name + ": ne[0] not a multiple of 32 for Q8_0")
        if any(t[0] == name for t in self.tensors):
            raise ValueError("duplicate tensor " + name)
        ne = list(reversed(tuple(shape))) or [1]
        self.tensors.append((name, ne, ggml_type, (tuple(shape), producer)))

    def write_stream(self, path):
        """Same bytes as write(), produced tensor by tensor (lazy tensors are
        materialised one at a time, then dropped)."""
        small = [e for e in self.kv if e[0] not in _BULK_KEYS]
        bulk = sorted((e for e in self.kv if e[0] in _BULK_KEYS), key=lambda e: _BULK_KEYS.index(e[0]))

        def size_of(ne, gtype, payload):
            if isinstance(payload, tuple):
                bs, ts = _TYPE_INFO[gtype]
                return int(np.prod(ne)) // bs * ts
            return len(payload)

        head = bytearray()
        head += b"GGUF" + struct.pack("<Iqq", 3, len(self.tensors), len(self.kv))
        for key, vtype, payload in small + bulk:
            head += _gguf_str(key) + struct.pack("<I", vtype) + payload
        offset = 0
        for name, ne, gtype, payload in self.tensors:
            head += _gguf_str(name) + struct.pack("<I", len(ne))
            head += b"".join(struct.pack("<q", n) for n in ne)
            head += struct.pack("<IQ", gtype, offset)
            offset += (size_of(ne, gtype, payload) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        head += b"\0" * (-len(head) % ALIGNMENT)
        total = len(head)
        with open(path, "wb") as f:
            f.write(head)
            for name, ne, gtype, payload in self.tensors:
                if isinstance(payload, tuple):
                    shape, producer = payload
                    arr = np.ascontiguousarray(producer())
                    if tuple(arr.shape) != shape:
                        raise ValueError("%s: producer shape %s != %s" % (name, arr.shape, shape))
                    # row chunks of ~16M values keep the temporaries of big
                    # tensors (a real-size token embedding) small; same bytes
                    rows = arr.reshape(-1, ne[0])
                    step = max(1, (1 << 24) // ne[0])
                    n_written = 0
                    for r0 in range(0, rows.shape[0], step):
                        chunk = rows[r0:r0 + step]
                        if gtype == GGML_Q8_0:
                            part = quantize_q8_0(chunk)
                        else:
                            part = chunk.astype("<f4" if gtype == GGML_F32 else "<f2").tobytes()
                        f.write(part)
                        n_written += len(part)
                    del arr, rows
                    pad = -n_written % ALIGNMENT
                    f.write(b"\0" * pad)
                    total += n_written + pad
                    continue
                f.write(payload)
                pad = -len(payload) % ALIGNMENT
                f.write(b"\0" * pad)
                total += len(payload) + pad
        return total

    # --- output -----------------------------------------------------------
    def write(self, path):
        small = [e for e in self.kv if e[0] not in _BULK_KEYS]
        bulk = sorted((e for e in self.kv if e[0] in _BULK_KEYS), key=lambda e: _BULK_KEYS.index(e[0]))
        out = bytearray()
        out += b"GGUF" + struct.pack("<Iqq", 3, len(self.tensors), len(self.kv))
        for key, vtype, payload in small + bulk:
            out += _gguf_str(key) + struct.pack("<I", vtype) + payload
        offset = 0
        offsets = []
        for name, ne, gtype, payload in self.tensors:
            offsets.append(offset)
            out += _gguf_str(name) + struct.pack("<I", len(ne))
            out += b"".join(struct.pack("<q", n) for n in ne)
            out += struct.pack("<IQ", gtype, offset)
            offset += (len(payload) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        out += b"\0" * (-len(out) % ALIGNMENT)
        for (name, ne, gtype, payload), off in zip(self.tensors, offsets):
            out += payload + b"\0" * (-len(payload) % ALIGNMENT)
        with open(path, "wb") as f:
            f.write(out)
        return len(out)


# --- reader (verification of our own files) ------------------------------------


class _Cursor:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            et = self.take("<I")
            n = self.take("<Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(_SCALAR_FMT[vtype])


def read_gguf(path):
    """Returns (kv, tensors). kv: key -> (value_type, value) where an array value
    is (elem_type, list). tensors: name -> (ggml type, ne, float32 ndarray in
    PyTorch order). Checks the layout rules a strict loader applies."""
    with open(path, "rb") as f:
        buf = f.read()
    c = _Cursor(buf)
    if buf[:4] != b"GGUF":
        raise ValueError("bad magic")
    c.pos = 4
    if c.take("<I") != 3:
        raise ValueError("not GGUF v3")
    n_t = c.take("<q")
    n_kv = c.take("<q")
    kv = {}
    for _ in range(n_kv):
        k = c.string()
        vt = c.take("<I")
        if k in kv:
            raise ValueError("duplicate key " + k)
        kv[k] = (vt, c.value(vt))
    infos = []
    for _ in range(n_t):
        name = c.string()
        nd = c.take("<I")
        if not 1 <= nd <= 4:
            raise ValueError("bad n_dims")
        ne = [c.take("<q") for _ in range(nd)]
        gt = c.take("<I")
        off = c.take("<Q")
        infos.append((name, ne, gt, off))
    data_start = (c.pos + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    tensors = {}
    expect = 0
    for name, ne, gt, off in infos:
        if off != expect:
            raise ValueError("%s: offset %d, expected %d" % (name, off, expect))
        n = int(np.prod(ne))
        bs, ts = _TYPE_INFO[gt]
        if ne[0] % bs:
            raise ValueError(name + ": ne[0] not multiple of block")
        size = n // bs * ts
        raw = buf[data_start + off : data_start + off + size]
        if len(raw) != size:
            raise ValueError(name + ": truncated")
        if gt == GGML_F32:
            a = np.frombuffer(raw, "<f4").astype(np.float32)
        elif gt == GGML_F16:
            a = np.frombuffer(raw, "<f2").astype(np.float32)
        else:
            a = dequantize_q8_0(raw, n)
        tensors[name] = (gt, ne, a.reshape(list(reversed(ne))))
        expect = off + (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    if data_start + expect != len(buf):
        raise ValueError("file size %d != data end %d" % (len(buf), data_start + expect))
    return kv, tensors


if __name__ == "__main__":
    # Self-test: round-trip every KV type and tensor type.
    import os
    import sys
    import tempfile

    w = GGUFWriter()
    w.add_string("general.architecture", "test")
    for vt, val in [(UINT8, 7), (INT8, -7), (UINT16, 700), (INT16, -700), (UINT32, 7 << 20), (INT32, -(7 << 20)),
                    (FLOAT32, 0.5), (BOOL, True), (UINT64, 1 << 40), (INT64, -(1 << 40)), (FLOAT64, 0.25)]:
        w.add_scalar("t.%d" % vt, vt, val)
    w.add_array("a.str", ["x", "yé", ""])
    w.add_array("a.i32", [1, -2, 3])
    w.add_array("a.f32", [1.5, -2.0])
    w.add_array("a.u32", [1, 2], UINT32)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    w.add_tensor("t.f32", x, GGML_F32)
    w.add_tensor("t.f16", x[:, :5], GGML_F16)
    w.add_tensor("t.q8", x, GGML_Q8_0)
    p = os.path.join(tempfile.mkdtemp(), "t.gguf")
    w.write(p)
    kv, ts = read_gguf(p)
    assert kv["t.%d" % FLOAT64] == (FLOAT64, 0.25) and kv["t.%d" % INT64] == (INT64, -(1 << 40))
    assert kv["a.str"] == (ARRAY, (STRING, ["x", "yé", ""])) and kv["a.i32"] == (ARRAY, (INT32, [1, -2, 3]))
    assert kv["a.u32"] == (ARRAY, (UINT32, [1, 2]))
    assert np.array_equal(ts["t.f32"][2], x) and ts["t.f32"][1] == [64, 3]
    assert np.array_equal(ts["t.f16"][2], x[:, :5].astype(np.float16).astype(np.float32))
    assert np.abs(ts["t.q8"][2] - x).max() < np.abs(x).max() / 100
    # write_stream with lazy tensors gives the same bytes as write()
    w2 = GGUFWriter()
    w2.kv = list(w.kv)
    w2.add_tensor_lazy("t.f32", x.shape, GGML_F32, lambda: x)
    w2.add_tensor_lazy("t.f16", x[:, :5].shape, GGML_F16, lambda: x[:, :5])
    w2.add_tensor_lazy("t.q8", x.shape, GGML_Q8_0, lambda: x)
    p2 = p + ".stream"
    w2.write_stream(p2)
    assert open(p, "rb").read() == open(p2, "rb").read()
    print("gguf_writer self-test OK")
    sys.exit(0)
