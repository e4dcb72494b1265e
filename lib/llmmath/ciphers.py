"""A small Feistel cipher and the avalanche effect, measured.

A Feistel network (Feistel, "Cryptography and computer privacy", Scientific
American, 1973; the structure of DES) splits a block into halves ``(L, R)`` and
applies rounds ``(L, R) -> (R, L xor F(R, k_i))``. Any round function ``F``
gives an invertible cipher: undo a round by ``(L, R) <- (R xor F(L, k_i), L)``.
A good cipher has the **avalanche** property: flipping one input bit flips
about half the output bits (the strict avalanche criterion: Webster & Tavares,
CRYPTO 1985). This toy is for illustration, not for security.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ._validate import positive_int

__all__ = ["feistel_keys", "feistel_encrypt", "feistel_decrypt", "bit_flips", "avalanche_feistel",
           "avalanche_sha256"]

_M32 = np.uint64(0xFFFFFFFF)


def feistel_keys(rounds: int = 8, seed: int = 0) -> np.ndarray:
    """``rounds`` random 32-bit round keys."""
    r = positive_int("rounds", rounds)
    return np.random.default_rng(seed).integers(0, 2**32, size=r, dtype=np.uint64)


def _round_f(r: np.ndarray, k: np.uint64) -> np.ndarray:
    # mix with the key, multiply by an odd constant (diffuses low bits upward),
    # rotate, and fold the high bits back down (diffuses high bits downward)
    x = (r ^ k) & _M32
    x = (x * np.uint64(0x9E3779B1)) & _M32
    x = ((x << np.uint64(11)) | (x >> np.uint64(21))) & _M32
    return (x ^ (x >> np.uint64(15)) ^ ((x * np.uint64(0x85EBCA6B)) >> np.uint64(13))) & _M32


def feistel_encrypt(blocks, keys) -> np.ndarray:
    """Encrypt 64-bit blocks (uint64 array, any shape) with one round per key."""
    b = np.asarray(blocks, dtype=np.uint64)
    L, R = b >> np.uint64(32), b & _M32
    for k in np.asarray(keys, dtype=np.uint64):
        L, R = R, L ^ _round_f(R, k)
    return (L << np.uint64(32)) | R


def feistel_decrypt(blocks, keys) -> np.ndarray:
    """Invert :func:`feistel_encrypt` (rounds undone in reverse order, whatever the round function)."""
    b = np.asarray(blocks, dtype=np.uint64)
    L, R = b >> np.uint64(32), b & _M32
    for k in np.asarray(keys, dtype=np.uint64)[::-1]:
        L, R = R ^ _round_f(L, k), L
    return (L << np.uint64(32)) | R


def bit_flips(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Number of differing bits between two uint64 arrays, elementwise."""
    x = np.asarray(a, dtype=np.uint64) ^ np.asarray(b, dtype=np.uint64)
    flat = np.ascontiguousarray(x.reshape(-1))
    return np.unpackbits(flat.view(np.uint8).reshape(-1, 8), axis=-1).sum(axis=-1).reshape(x.shape)


def avalanche_feistel(rounds: int, n_blocks: int = 2000, seed: int = 1) -> np.ndarray:
    """Output bits flipped (of 64) when one random input bit is flipped, for ``n_blocks`` random blocks."""
    rng = np.random.default_rng(seed)
    keys = feistel_keys(rounds, seed)
    x = rng.integers(0, 2**63, size=n_blocks, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n_blocks, dtype=np.uint64)
    bit = rng.integers(0, 64, size=n_blocks, dtype=np.uint64)
    return bit_flips(feistel_encrypt(x, keys), feistel_encrypt(x ^ (np.uint64(1) << bit), keys))


def avalanche_sha256(n_messages: int = 500, message_bytes: int = 64, seed: int = 2) -> np.ndarray:
    """Output bits flipped (of 256) in SHA-256 (``hashlib``) when one input bit is flipped."""
    rng = np.random.default_rng(seed)
    out = np.empty(n_messages, dtype=np.int64)
    for i in range(n_messages):
        msg = bytearray(rng.integers(0, 256, size=message_bytes, dtype=np.uint8).tobytes())
        a = hashlib.sha256(msg).digest()
        j = int(rng.integers(0, 8 * message_bytes))
        msg[j // 8] ^= 1 << (j % 8)
        b = hashlib.sha256(msg).digest()
        out[i] = int.from_bytes(bytes(u ^ v for u, v in zip(a, b)), "big").bit_count()
    return out
