"""The loops of the Sharon / A-Seq kernel (sharon.md §7.3-7.4) over one partition, as plain functions
that :func:`namespace` compiles with numba (``cache=True``) or leaves as Python for tiny partitions.

Input (built by :mod:`cepopt.executor.sharon_kernel`): the plan's static tables ``S`` and the
partition's rows ``P``, each one int64 array whose header holds the offsets of its tables (a few flat
arrays keep numba's compile time and call overhead small). A row is a (time-stamp batch, level key)
pair: the level key (event type + position filters) has ``k`` events in the batch; per attribute the
row holds the sum of their integer-scaled values and the min / max of their value ranks. One call runs
every batch (time ``t``):

1. close the windows that end at or before ``t`` (per window frame), emitting one row per (query,
   window) whose last segment has START records in the window;
2. boundary snapshots (§7.4) for the new START records of boundary segments, from the state before
   the batch: H^(k)[d][w] = sum over START c of Seg_k with c.time >= start(w) of H^(k-1)[c][w] (x) Full(c);
   a query whose last segment is one event type adds H (x) unit(d) to its window results at once;
3. level updates of every instance the batch touches (levels from the last to the first, so every
   update reads the state from before the batch), over the live START records;
4. new START records.

State ``K`` (int64, header of offsets): per instance its START records in a ring buffer (capacity =
the most records ever live, a power of two), per level the count, per sum target the sum and per
min/max target the min and max rank of the partial matches starting there; ``X`` (uint8) the
existence flags min/max need; ``T`` (float64) per (instance, level, window) the total count, a bound
of every emitted value. Arithmetic is int64 modulo 2^64 (``mod`` 0) or modulo a prime p < 2^31
(``mod`` p); the caller joins passes by the Chinese remainder theorem when the bounds ask for it.

Operation counts ``K[K_OPS]``: "update" = k x live START records per (instance, level >= 2, batch with
k events of that level), plus k per START event; "combine" = START records read per boundary
snapshot and window close (a first segment's read, H = ONE, once per instance, window and batch).
"""

from __future__ import annotations

import types

import numpy as np

__all__ = ["NO_MAX", "NO_MIN", "namespace", "pack"]

#: min / max rank sentinels (no value)
NO_MIN = 2 ** 62
NO_MAX = -1

# ---- static tables S: header slots (arrays, then scalars)
STATIC = ("il_off", "il_lk", "il_inst", "il_j", "lk_il_ptr", "lk_il", "lk_st_ptr", "lk_st", "inst_frame", "inst_mm",
          "ist_ptr", "ist_attr", "ist_lv", "imt_ptr", "imt_attr", "imt_lv", "q_frame", "q_seg_ptr", "q_seg",
          "qst_ptr", "qst_map", "qmt_ptr", "qmt_map", "q_direct", "q_last_pair", "p_q", "p_k", "p_seg", "p_next",
          "p_prev", "p_direct", "inst_pair_ptr", "inst_pair", "f_q_ptr", "f_q", "inst_sink", "lk_sp_ptr", "lk_sp",
          "lk_sr_ptr", "lk_sr", "lk_ns", "inst_rep", "lk_sg_ptr", "sg_seg", "sg_frame", "sg_ptr", "sg_q")
(IL_OFF, IL_LK, IL_INST, IL_J, LK_IL_PTR, LK_IL, LK_ST_PTR, LK_ST, INST_FRAME, INST_MM, IST_PTR, IST_ATTR, IST_LV,
 IMT_PTR, IMT_ATTR, IMT_LV, Q_FRAME, Q_SEG_PTR, Q_SEG, QST_PTR, QST_MAP, QMT_PTR, QMT_MAP, Q_DIRECT, Q_LAST_PAIR,
 P_Q, P_K, P_SEG, P_NEXT, P_PREV, P_DIRECT, INST_PAIR_PTR, INST_PAIR, F_Q_PTR, F_Q, INST_SINK, LK_SP_PTR, LK_SP,
 LK_SR_PTR, LK_SR, LK_NS, INST_REP, LK_SG_PTR, SG_SEG, SG_FRAME, SG_PTR, SG_Q) = range(47)
STATIC_SCALARS = ("n_inst", "n_q", "n_pair", "n_lk", "maxh", "maxr", "n_il")
N_INST, N_Q, N_PAIR, N_LK, MAXH, MAXR, N_IL = range(47, 54)

# ---- partition P
PART = ("bts", "row_ptr", "row_lk", "row_k", "row_sum", "row_min", "row_max", "f_len", "f_slide", "f_off")
BTS, ROW_PTR, ROW_LK, ROW_K, ROW_SUM, ROW_MIN, ROW_MAX, F_LEN, F_SLIDE, F_OFF = range(10)
PART_SCALARS = ("nb", "nsa", "nma", "nf")
NB, NSA, NMA, NF = range(10, 14)

# ---- state K: header slots (pool offsets and scalars)
(K_CAP, K_TBASE, K_N, K_HEAD, K_TIMES, K_SLOTS, K_CBASE, K_CNT, K_XBASE, K_SBASE, K_SUMS, K_MBASE, K_MINS, K_MAXS,
 K_HBASE, K_HC, K_HSBASE, K_HS, K_HMBASE, K_HMIN, K_HMAX, K_HXBASE, K_RBASE, K_RTAG, K_RC, K_RS, K_RMIN, K_RMAX,
 K_WBASE, K_CTAG_B, K_CTAG_W, K_CC, K_CN, K_CS, K_CMIN, K_CMAX, K_VER, K_TOTBASE, K_TTAG, K_SC_S, K_SC_MN,
 K_SC_MX, K_NEXT_K, K_BUF, K_OPS, K_WCNT, K_FSTART, K_FLAST, K_FB, K_CB, K_MS, K_MM, K_NW, K_OUTN, K_XEX,
 K_XHX, K_XCX, K_XSC) = range(58)
K_HEADER = 58
#: the int64 pools of K, in header order (K_CAP .. K_FLAST); K_XEX .. K_XSC: offsets of the uint8 pools of X
#: (existence flags of instance levels, boundary maps, the read cache and the scratch record)
K_POOLS = 50
#: per frame, the current batch's first and last open window, the start of the first, its slot, and the
#: time from which they change
FB_LO, FB_HI, FB_LIVE, FB_SLOT, FB_UNTIL = range(5)
FB = 5


# ---------------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------------


def pack(arrays, scalars) -> np.ndarray:
    """One int64 array: a header of offsets (one per array) and scalars, then the arrays, flattened."""
    head = len(arrays) + len(scalars)
    offs, parts, pos = [], [], head
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=np.int64).reshape(-1)
        offs.append(pos)
        parts.append(a)
        pos += len(a)
    out = np.empty(pos, dtype=np.int64)
    out[:head] = offs + [int(s) for s in scalars]
    if parts:
        out[head:] = np.concatenate(parts)
    return out


# ---------------------------------------------------------------------------------------------
# windows (integers; Python floor division): window w = [w S + off, w S + W + off)
# ---------------------------------------------------------------------------------------------


def k_lo(P, f, t):
    """First window of frame f holding time t (>= 0)."""
    k = (t - P[P[F_OFF] + f] - P[P[F_LEN] + f]) // P[P[F_SLIDE] + f] + 1
    return k if k > 0 else 0


def k_hi(P, f, t):
    """Last window of frame f holding time t."""
    return (t - P[P[F_OFF] + f]) // P[P[F_SLIDE] + f]


def w_start(P, f, w):
    return w * P[P[F_SLIDE] + f] + P[P[F_OFF] + f]


# ---------------------------------------------------------------------------------------------
# allocation
# ---------------------------------------------------------------------------------------------


def _levels(S, i):
    return S[S[IL_OFF] + i + 1] - S[S[IL_OFF] + i]


def _excl(sizes) -> np.ndarray:
    """Exclusive prefix sums (offsets of consecutive blocks of the given sizes), as int64."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64) if len(sizes) else sizes


def capacities(bts, row_ptr, row_lk, lk_st_ptr, lk_st, inst_frame, f_len, f_slide, f_off):
    """Per instance its ring capacity: a power of two > the most START records live at once (1 for a
    sink, which keeps none). Two pointers over the time stamps of each first level's rows."""
    nlk = len(lk_st_ptr) - 1
    ptr = np.zeros(nlk + 1, dtype=np.int64)
    for r in range(len(row_lk)):
        ptr[row_lk[r] + 1] += 1
    for lk in range(nlk):
        ptr[lk + 1] += ptr[lk]
    fill = ptr[:-1].copy()
    times = np.empty(max(1, len(row_lk)), dtype=np.int64)
    for b in range(len(bts)):
        for r in range(row_ptr[b], row_ptr[b + 1]):
            times[fill[row_lk[r]]] = bts[b]
            fill[row_lk[r]] += 1
    cap = np.ones(len(inst_frame), dtype=np.int64)
    for lk in range(nlk):
        for x in range(lk_st_ptr[lk], lk_st_ptr[lk + 1]):
            i = lk_st[x]
            f = inst_frame[i]
            lo = ptr[lk]
            most = 1
            for a in range(ptr[lk], ptr[lk + 1]):
                k = (times[a] - f_off[f] - f_len[f]) // f_slide[f] + 1
                first = max(k, 0) * f_slide[f] + f_off[f]
                while times[lo] < first:
                    lo += 1
                most = max(most, a - lo + 1)
            c = 2
            while c <= most:
                c *= 2
            cap[i] = c
    return cap


def max_rows(t: dict, bts, frames) -> int:
    """An upper bound of the rows one run emits: per query, the windows of its frame holding a batch."""
    f_len, f_slide, f_off = frames
    wins = []
    for f in range(len(f_len)):
        lo = np.maximum(0, (bts - f_off[f] - f_len[f]) // f_slide[f] + 1)
        hi = (bts - f_off[f]) // f_slide[f]
        prev = np.concatenate(([-1], np.maximum.accumulate(hi)[:-1]))
        wins.append(int(np.maximum(0, hi - np.maximum(lo, prev + 1) + 1).sum()))
    return int(np.asarray(wins, dtype=np.int64)[t["q_frame"]].sum())


def alloc(t: dict, bts, row_ptr, row_lk, frames, ns: dict | None = None):
    """The state of one run: K (header + int64 pools), X (uint8 existence flags), T (count totals).
    ``ns``: the loops' namespace (:func:`namespace`) that computes the ring capacities."""
    f_len, f_slide, _ = frames
    ni = len(t["inst_frame"])
    cap = (ns or globals())["capacities"](bts, row_ptr, row_lk, t["lk_st_ptr"], t["lk_st"], t["inst_frame"], *frames)
    slots = -(-np.asarray(f_len) // np.asarray(f_slide)) + 1
    h = np.diff(t["il_off"])
    il_cap = cap[t["il_inst"]]
    il_mm = t["inst_mm"][t["il_inst"]].astype(bool)
    ist_inst = np.repeat(np.arange(ni), np.diff(t["ist_ptr"]))
    imt_inst = np.repeat(np.arange(ni), np.diff(t["imt_ptr"]))
    nst = np.diff(t["qst_ptr"])
    nmt = np.diff(t["qmt_ptr"])
    ms, mm = max(1, int(nst.max(initial=0))), max(1, int(nmt.max(initial=0)))
    # boundary maps H of the stored (not direct) boundaries, window slot major
    stored = t["p_direct"] == 0
    block = slots[t["q_frame"][t["p_q"]]] * cap[t["p_next"]] * stored
    pmt = nmt[t["p_q"]]
    sizes_h = [block, nst[t["p_q"]] * block, pmt * block, (pmt > 0) * block]
    hbase = [np.where(stored, _excl(sz), -1) for sz in sizes_h]
    q_slots = slots[t["q_frame"]]
    rbase = np.concatenate(([0], np.cumsum(q_slots))).astype(np.int64)
    i_slots = slots[t["inst_frame"]]
    wbase = np.concatenate(([0], np.cumsum(i_slots))).astype(np.int64)
    totbase = np.concatenate(([0], np.cumsum(h * i_slots))).astype(np.int64)
    nr, nw = int(rbase[-1]), int(wbase[-1])
    nist, nimt = max(1, len(t["ist_attr"])), max(1, len(t["imt_attr"]))
    xbase = np.where(il_mm, _excl(il_cap * il_mm), -1)
    s_size = h[ist_inst] * cap[ist_inst]  # per instance target: its levels x records
    m_size = h[imt_inst] * cap[imt_inst]
    nm, hm = int(m_size.sum()), int(sizes_h[2].sum())
    # in header order, K_CAP .. K_FB: an array, or (size, fill value) of a block
    pools = [
        cap, _excl(cap), (ni, 0), (ni, 0), (int(cap.sum()), 0), slots, _excl(il_cap), (int(il_cap.sum()), 0), xbase,
        _excl(s_size), (int(s_size.sum()), 0), _excl(m_size), (nm, NO_MIN), (nm, NO_MAX),
        hbase[0], (int(sizes_h[0].sum()), 0), hbase[1], (int(sizes_h[1].sum()), 0), hbase[2], (hm, NO_MIN),
        (hm, NO_MAX), hbase[3], rbase, (nr, -1), (nr, 0), (nr * ms, 0), (nr * mm, NO_MIN), (nr * mm, NO_MAX),
        wbase, (nw, -1), (nw, -1), (nw, 0), (nw, 0), (nist * nw, 0), (nimt * nw, NO_MIN), (nimt * nw, NO_MAX), (ni, 0),
        totbase, (nw, -1), (ms, 0), (mm, NO_MIN), (mm, NO_MAX), (len(f_len), 0), (3 * max(1, len(t["lk_il"])), 0),
        (2, 0), (nw, 0), (len(f_len), -1), (len(f_len), -1), (FB * len(f_len), -(2 ** 62)), (nw, -1)]
    sizes = [x[0] if isinstance(x, tuple) else len(x) for x in pools]
    K = np.zeros(K_HEADER + sum(sizes), dtype=np.int64)  # one allocation; zero blocks stay untouched
    K[:K_POOLS] = K_HEADER + _excl(sizes)
    for slot, x in enumerate(pools):
        if not isinstance(x, tuple):
            K[K[slot]:K[slot] + len(x)] = x
        elif x[1]:
            K[K[slot]:K[slot] + x[0]] = x[1]
    nx = [int((il_cap * il_mm).sum()), int(sizes_h[3].sum()), nw, 1]
    K[K_MS], K[K_MM], K[K_NW] = ms, mm, nw
    K[K_XEX:K_XSC + 1] = _excl(nx)
    X = np.zeros(sum(nx), dtype=np.uint8)
    # count totals per (instance, level, window slot), then direct results' bounds per (query, slot)
    T = np.zeros(int(totbase[-1]) + nr + 1, dtype=np.float64)
    return K, X, T


# ---------------------------------------------------------------------------------------------
# ring helpers
# ---------------------------------------------------------------------------------------------


def _lower(K, i, t):
    """First record ordinal of instance i (from its head) with time >= t."""
    lo = K[K[K_HEAD] + i]
    hi = K[K[K_N] + i]
    mask = K[K[K_CAP] + i] - 1
    base = K[K_TIMES] + K[K[K_TBASE] + i]
    while lo < hi:
        mid = (lo + hi) // 2
        if K[base + (mid & mask)] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _frame_batch(P, K, t):
    """Per frame, the windows open at time t (the current batch): first, last, start of the first, slot."""
    for f in range(P[NF]):
        fb = K[K_FB] + FB * f
        if t < K[fb + FB_UNTIL]:
            continue  # the same windows as at the previous batch
        lo, hi = k_lo(P, f, t), k_hi(P, f, t)
        K[fb + FB_LO] = lo
        K[fb + FB_HI] = hi
        K[fb + FB_LIVE] = w_start(P, f, lo)
        K[fb + FB_SLOT] = lo % K[K[K_SLOTS] + f]
        K[fb + FB_UNTIL] = min(w_start(P, f, lo) + P[P[F_LEN] + f], w_start(P, f, hi + 1))


def _expire(S, P, K, i):
    """Drop the START records of instance i that no window open at the current batch holds."""
    f = S[S[INST_FRAME] + i]
    first = K[K[K_FB] + FB * f + FB_LIVE]
    mask = K[K[K_CAP] + i] - 1
    base = K[K_TIMES] + K[K[K_TBASE] + i]
    h = K[K[K_HEAD] + i]
    n = K[K[K_N] + i]
    while h < n and K[base + (h & mask)] < first:
        h += 1
    K[K[K_HEAD] + i] = h


def _pieces(lo, n, cap):
    """Ring slots of ordinals lo..n-1 as two contiguous ranges [a0, a1) and [b0, b1)."""
    a = lo & (cap - 1)
    size = n - lo
    if a + size <= cap:
        return a, a + size, 0, 0
    return a, cap, 0, a + size - cap


# ---------------------------------------------------------------------------------------------
# level updates (step 3) and new START records (step 4)
# ---------------------------------------------------------------------------------------------


def _axpy(K, dst, src, a, b, k, mod):
    """K[dst+s] += k * K[src+s] for s in [a, b)."""
    x = K[dst + a:dst + b]
    y = K[src + a:src + b]
    if mod == 0:
        for s in range(b - a):
            x[s] += k * y[s]
    else:
        for s in range(b - a):
            x[s] = (x[s] + k * y[s]) % mod


def _sum_update(K, dst, src, csrc, a, b, k, v, mod):
    """S_j += k S_{j-1} + v C_{j-1} for s in [a, b)."""
    x = K[dst + a:dst + b]
    y = K[src + a:src + b]
    c = K[csrc + a:csrc + b]
    if mod == 0:
        for s in range(b - a):
            x[s] += k * y[s] + v * c[s]
    else:
        for s in range(b - a):
            x[s] = ((x[s] + k * y[s]) % mod + v * c[s]) % mod


def _mm_update(K, X, dst, src, xs, a, b, lo, hi, mbl):
    """Where level j-1 has matches, level j's min/max take level j-1's and the batch's (max block at
    offset mbl from the min block)."""
    for s in range(a, b):
        if X[xs + s]:
            m = min(K[src + s], lo)
            if m < K[dst + s]:
                K[dst + s] = m
            m = max(K[src + mbl + s], hi)
            if m > K[dst + mbl + s]:
                K[dst + mbl + s] = m


def _ex_update(X, xd, xs, a, b):
    x = X[xd + a:xd + b]
    y = X[xs + a:xs + b]
    for s in range(b - a):
        x[s] |= y[s]


def _target_value(S, P, g, j, r, k):
    """What level j's events of row r add to instance sum target g (per match)."""
    if not S[S[IST_LV] + g * S[MAXH] + j]:
        return 0
    attr = S[S[IST_ATTR] + g]
    return k if attr < 0 else P[P[ROW_SUM] + r * P[NSA] + attr]


def _row_mm(S, P, g, j, r):
    """min / max rank of row r's events for instance min/max target g at level j (sentinels: none)."""
    if not S[S[IMT_LV] + g * S[MAXH] + j]:
        return NO_MIN, NO_MAX
    attr = S[S[IMT_ATTR] + g]
    return P[P[ROW_MIN] + r * P[NMA] + attr], P[P[ROW_MAX] + r * P[NMA] + attr]


def _update_mm(S, P, K, X, i, j, r, pieces):
    """Existence and min/max of level j of instance i (its live slots ``pieces``)."""
    a0, a1, b0, b1 = pieces
    il = S[S[IL_OFF] + i] + j
    xd = K[K_XEX] + K[K[K_XBASE] + il]
    xs = K[K_XEX] + K[K[K_XBASE] + il - 1]
    cap = K[K[K_CAP] + i]
    mbl = K[K_MAXS] - K[K_MINS]
    for g in range(S[S[IMT_PTR] + i], S[S[IMT_PTR] + i + 1]):
        lo, hi = _row_mm(S, P, g, j, r)
        dst = K[K_MINS] + K[K[K_MBASE] + g] + j * cap
        _mm_update(K, X, dst, dst - cap, xs, a0, a1, lo, hi, mbl)
        _mm_update(K, X, dst, dst - cap, xs, b0, b1, lo, hi, mbl)
    _ex_update(X, xd, xs, a0, a1)
    _ex_update(X, xd, xs, b0, b1)


def _update(S, P, K, X, T, i, j, r, t, mod):
    """Level j >= 1 of instance i with the events of row r (batch at time t), over the live records."""
    _expire(S, P, K, i)
    h0 = K[K[K_HEAD] + i]
    n = K[K[K_N] + i]
    k = P[P[ROW_K] + r]
    K[K[K_OPS]] += k * (n - h0)
    il = S[S[IL_OFF] + i] + j
    cap = K[K[K_CAP] + i]
    if n > h0:
        a0, a1, b0, b1 = _pieces(h0, n, cap)
        csrc = K[K_CNT] + K[K[K_CBASE] + il - 1]
        for g in range(S[S[IST_PTR] + i], S[S[IST_PTR] + i + 1]):
            v = _target_value(S, P, g, j, r, k)
            dst = K[K_SUMS] + K[K[K_SBASE] + g] + j * cap
            _sum_update(K, dst, dst - cap, csrc, a0, a1, k, v, mod)
            _sum_update(K, dst, dst - cap, csrc, b0, b1, k, v, mod)
        if S[S[INST_MM] + i]:
            _update_mm(S, P, K, X, i, j, r, (a0, a1, b0, b1))
        dst = K[K_CNT] + K[K[K_CBASE] + il]
        _axpy(K, dst, csrc, a0, a1, k, mod)
        _axpy(K, dst, csrc, b0, b1, k, mod)
        if j == _levels(S, i) - 1:
            K[K[K_VER] + i] += 1  # Full changed: cached reads of i are stale
    _total(S, P, K, T, i, j, float(k))


def _total(S, P, K, T, i, j, k):
    """Count totals per window holding t: T_j(w) += k T_{j-1}(w), or T_0(w) += k (a START)."""
    f = S[S[INST_FRAME] + i]
    m = K[K[K_SLOTS] + f]
    fb = K[K_FB] + FB * f
    sl = K[fb + FB_SLOT] - 1
    w_lo, w_hi = K[fb + FB_LO], K[fb + FB_HI]
    tot0 = K[K[K_TOTBASE] + i]
    tag0 = K[K_TTAG] + K[K[K_WBASE] + i]
    cnt0 = K[K_WCNT] + K[K[K_WBASE] + i]
    for w in range(w_lo, w_hi + 1):
        sl = sl + 1 if sl + 1 < m else 0
        base = tot0 + sl
        if K[tag0 + sl] != w:
            K[tag0 + sl] = w
            K[cnt0 + sl] = 0
            for jj in range(_levels(S, i)):
                T[base + jj * m] = 0.0
        if j == 0:
            T[base] += k
            K[cnt0 + sl] += 1
        else:
            T[base + j * m] += k * T[base + (j - 1) * m]


def _frame_start(S, K, i, t):
    """A START record of instance i at time t: its frame has windows to close."""
    f = S[S[INST_FRAME] + i]
    fs = K[K_FSTART] + f
    if K[fs] < 0:
        K[fs] = t
    K[K[K_FLAST] + f] = t


def _sink_starts(S, P, K, T, lk, r, t):
    """The START events of row r (level key lk) in sinks: one event type, only the last segment of
    queries whose results their snapshots made, they keep no record; the operations they stand for
    and, per (level key, frame), the START records per window (what the closes count)."""
    k = P[P[ROW_K] + r]
    K[K[K_OPS]] += k * S[S[LK_NS] + lk]
    for x in range(S[S[LK_SR_PTR] + lk], S[S[LK_SR_PTR] + lk + 1]):
        i = S[S[LK_SR] + x]
        _frame_start(S, K, i, t)
        _total(S, P, K, T, i, np.int64(0), float(k))


def _add_start(S, P, K, X, T, i, r, t):
    """A new START record of instance i from row r (its first level's events at time t)."""
    _frame_start(S, K, i, t)
    _expire(S, P, K, i)
    cap = K[K[K_CAP] + i]
    o = K[K[K_N] + i]
    s = o & (cap - 1)
    k = P[P[ROW_K] + r]
    K[K[K_OPS]] += k
    K[K[K_TIMES] + K[K[K_TBASE] + i] + s] = t
    h = _levels(S, i)
    for j in range(h):
        il = S[S[IL_OFF] + i] + j
        K[K[K_CNT] + K[K[K_CBASE] + il] + s] = k if j == 0 else 0
        if K[K[K_XBASE] + il] >= 0:
            X[K[K_XEX] + K[K[K_XBASE] + il] + s] = 1 if j == 0 else 0
    for g in range(S[S[IST_PTR] + i], S[S[IST_PTR] + i + 1]):
        v = _target_value(S, P, g, np.int64(0), r, k)
        base = K[K_SUMS] + K[K[K_SBASE] + g] + s
        for j in range(h):
            K[base + j * cap] = v if j == 0 else 0
    for g in range(S[S[IMT_PTR] + i], S[S[IMT_PTR] + i + 1]):
        lo, hi = _row_mm(S, P, g, np.int64(0), r)
        base = K[K[K_MBASE] + g] + s
        for j in range(h):
            K[K[K_MINS] + base + j * cap] = lo if j == 0 else NO_MIN
            K[K[K_MAXS] + base + j * cap] = hi if j == 0 else NO_MAX
    K[K[K_N] + i] = o + 1
    if h == 1:
        K[K[K_VER] + i] += 1  # the new record's Full is its own events
    _total(S, P, K, T, i, np.int64(0), float(k))


# ---------------------------------------------------------------------------------------------
# reads (snapshots and closes)
# ---------------------------------------------------------------------------------------------


def _range_sum(K, base, a, b):
    x = K[base + a:base + b]
    s = 0
    for c in range(b - a):
        s += x[c]
    return s


def _range_dot(K, xb, yb, a, b, mod):
    x = K[xb + a:xb + b]
    y = K[yb + a:yb + b]
    s = 0
    if mod == 0:
        for c in range(b - a):
            s += x[c] * y[c]
    else:
        for c in range(b - a):
            s += (x[c] * y[c]) % mod
    return s


def _range_mm(K, X, mb, xb, a, b, lo, hi, mbl):
    """min / max over slots [a, b) where X says the record has matches."""
    for c in range(a, b):
        if X[xb + c]:
            lo = min(lo, K[mb + c])
            hi = max(hi, K[mb + mbl + c])
    return lo, hi


def _range_any(X, xb, a, b):
    for c in range(a, b):
        if X[xb + c]:
            return 1
    return 0


def _read_instance(S, P, K, X, i, w, sl, b, mod):
    """Sum over the START records of instance i in window w of Full (H = ONE), before batch b. Cached per
    (instance, window): recomputed only when the instance's last level changed since (its version), the
    records read counted once per (instance, window, batch). Returns the cache index."""
    f = S[S[INST_FRAME] + i]
    ci = K[K[K_WBASE] + i] + sl
    tv, tw, tb = K[K_CTAG_B] + ci, K[K_CTAG_W] + ci, K[K_CB] + ci
    n = K[K[K_N] + i]
    if K[tw] != w:
        K[tw] = w
        K[tv] = -1
        K[tb] = -1
        K[K[K_CN] + ci] = _lower(K, i, w_start(P, f, w))
    lo = K[K[K_CN] + ci]
    if K[tb] != b:
        K[tb] = b
        K[K[K_OPS] + 1] += n - lo
    ver = K[K[K_VER] + i]
    if K[tv] == ver:
        return ci
    K[tv] = ver
    cap = K[K[K_CAP] + i]
    h = _levels(S, i)
    il = S[S[IL_OFF] + i] + h - 1
    a0, a1, b0, b1 = _pieces(lo, n, cap)
    base = K[K_CNT] + K[K[K_CBASE] + il]
    c = _range_sum(K, base, a0, a1) + _range_sum(K, base, b0, b1)
    K[K[K_CC] + ci] = c % mod if mod else c
    nw = K[K_NW]
    for g in range(S[S[IST_PTR] + i], S[S[IST_PTR] + i + 1]):
        base = K[K_SUMS] + K[K[K_SBASE] + g] + (h - 1) * cap
        v = _range_sum(K, base, a0, a1) + _range_sum(K, base, b0, b1)
        K[K[K_CS] + g * nw + ci] = v % mod if mod else v
    if S[S[INST_MM] + i]:
        xb = K[K_XEX] + K[K[K_XBASE] + il]
        mbl = K[K_MAXS] - K[K_MINS]
        for g in range(S[S[IMT_PTR] + i], S[S[IMT_PTR] + i + 1]):
            mb = K[K_MINS] + K[K[K_MBASE] + g] + (h - 1) * cap
            lo_v, hi_v = _range_mm(K, X, mb, xb, a0, a1, np.int64(NO_MIN), np.int64(NO_MAX), mbl)
            lo_v, hi_v = _range_mm(K, X, mb, xb, b0, b1, lo_v, hi_v, mbl)
            K[K[K_CMIN] + g * nw + ci] = lo_v
            K[K[K_CMAX] + g * nw + ci] = hi_v
        X[K[K_XCX] + ci] = _range_any(X, xb, a0, a1) | _range_any(X, xb, b0, b1)
    return ci


def _read_first(S, P, K, X, q, i, w, sl, b, mod):
    """A read of query q's first segment (instance i) in window w: the record in the scratch, per query
    target. Returns (count, records read)."""
    ci = _read_instance(S, P, K, X, i, w, sl, b, mod)
    nw = K[K_NW]
    if S[S[QST_PTR] + q + 1] == S[S[QST_PTR] + q] and S[S[QMT_PTR] + q + 1] == S[S[QMT_PTR] + q]:
        return K[K[K_CC] + ci], K[K[K_N] + i] - K[K[K_CN] + ci]  # COUNT(*) only
    for t in range(S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]):
        g = S[S[QST_MAP] + (S[S[QST_PTR] + q] + t) * S[MAXR]]
        K[K[K_SC_S] + t] = K[K[K_CS] + g * nw + ci] if g >= 0 else 0
    X[K[K_XSC]] = X[K[K_XCX] + ci] if S[S[INST_MM] + i] else 0
    for t in range(S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]):
        g = S[S[QMT_MAP] + (S[S[QMT_PTR] + q] + t) * S[MAXR]]
        K[K[K_SC_MN] + t] = K[K[K_CMIN] + g * nw + ci] if g >= 0 else NO_MIN
        K[K[K_SC_MX] + t] = K[K[K_CMAX] + g * nw + ci] if g >= 0 else NO_MAX
    return K[K[K_CC] + ci], K[K[K_N] + i] - K[K[K_CN] + ci]


def _read_weighted(S, P, K, X, hp, w, sl, mod):
    """Sum over the START records c of Seg_k (the next segment of boundary hp = (q, k-1)) in window w
    of H^(k-1)[c][w] (x) Full(c): the record in the scratch. Returns (count, records read)."""
    q = S[S[P_Q] + hp]
    i = S[S[P_NEXT] + hp]
    seg = S[S[P_K] + hp]  # 0-based index of Seg_k in q
    f = S[S[Q_FRAME] + q]
    m = K[K[K_SLOTS] + f]
    cap = K[K[K_CAP] + i]
    lo = _lower(K, i, w_start(P, f, w))
    n = K[K[K_N] + i]
    K[K[K_OPS] + 1] += n - lo
    h = _levels(S, i)
    il = S[S[IL_OFF] + i] + h - 1
    a0, a1, b0, b1 = _pieces(lo, n, cap)
    blk = m * cap
    hb = K[K_HC] + K[K[K_HBASE] + hp] + sl * cap
    fc = K[K_CNT] + K[K[K_CBASE] + il]
    c = _range_dot(K, hb, fc, a0, a1, mod) + _range_dot(K, hb, fc, b0, b1, mod)
    for t in range(S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]):
        g = S[S[QST_MAP] + (S[S[QST_PTR] + q] + t) * S[MAXR] + seg]
        hs = K[K_HS] + K[K[K_HSBASE] + hp] + t * blk + sl * cap
        v = _range_dot(K, hs, fc, a0, a1, mod) + _range_dot(K, hs, fc, b0, b1, mod)
        if g >= 0:
            fs = K[K_SUMS] + K[K[K_SBASE] + g] + (h - 1) * cap
            v += _range_dot(K, hb, fs, a0, a1, mod) + _range_dot(K, hb, fs, b0, b1, mod)
        K[K[K_SC_S] + t] = v % mod if mod else v
    if S[S[QMT_PTR] + q + 1] > S[S[QMT_PTR] + q]:
        _read_weighted_mm(S, K, X, hp, q, i, seg, sl, (a0, a1, b0, b1))
    return (c % mod if mod else c), n - lo


def _read_weighted_mm(S, K, X, hp, q, i, seg, sl, pieces):
    """min/max part of a weighted read: over records where both H and Full have matches."""
    cap = K[K[K_CAP] + i]
    blk = K[K[K_SLOTS] + S[S[Q_FRAME] + q]] * cap
    h = _levels(S, i)
    hx = K[K_XHX] + K[K[K_HXBASE] + hp] + sl * cap
    fx = K[K_XEX] + K[K[K_XBASE] + S[S[IL_OFF] + i] + h - 1]
    hmbl = K[K_HMAX] - K[K_HMIN]
    mbl = K[K_MAXS] - K[K_MINS]
    x = 0
    for t in range(S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]):
        g = S[S[QMT_MAP] + (S[S[QMT_PTR] + q] + t) * S[MAXR] + seg]
        hm = K[K_HMIN] + K[K[K_HMBASE] + hp] + t * blk + sl * cap
        fm = K[K_MINS] + K[K[K_MBASE] + g] + (h - 1) * cap if g >= 0 else -1
        lo, hi = NO_MIN, NO_MAX
        for y in range(2):
            a, b = (pieces[0], pieces[1]) if y == 0 else (pieces[2], pieces[3])
            for c in range(a, b):
                if X[hx + c] and X[fx + c]:
                    x = 1
                    lo = min(lo, K[hm + c])
                    hi = max(hi, K[hm + hmbl + c])
                    if fm >= 0:
                        lo = min(lo, K[fm + c])
                        hi = max(hi, K[fm + mbl + c])
        K[K[K_SC_MN] + t] = lo
        K[K[K_SC_MX] + t] = hi
    X[K[K_XSC]] = x


# ---------------------------------------------------------------------------------------------
# boundary snapshots (step 2)
# ---------------------------------------------------------------------------------------------


def _clear_column(S, K, X, p, q, cap, s):
    """Boundary p's map H at ring slot s: zero for every window slot."""
    m = K[K[K_SLOTS] + S[S[Q_FRAME] + q]]
    blk = m * cap
    nst = S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]
    nmt = S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]
    for sl in range(m):
        K[K[K_HC] + K[K[K_HBASE] + p] + sl * cap + s] = 0
        for x in range(nst):
            K[K[K_HS] + K[K[K_HSBASE] + p] + x * blk + sl * cap + s] = 0
        for x in range(nmt):
            K[K[K_HMIN] + K[K[K_HMBASE] + p] + x * blk + sl * cap + s] = NO_MIN
            K[K[K_HMAX] + K[K[K_HMBASE] + p] + x * blk + sl * cap + s] = NO_MAX
        if nmt:
            X[K[K_XHX] + K[K[K_HXBASE] + p] + sl * cap + s] = 0


def _store(S, K, X, p, q, cap, s, sl, c):
    """The scratch record as H[s][window in slot sl] of boundary p."""
    m = K[K[K_SLOTS] + S[S[Q_FRAME] + q]]
    blk = m * cap
    K[K[K_HC] + K[K[K_HBASE] + p] + sl * cap + s] = c
    for x in range(S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]):
        K[K[K_HS] + K[K[K_HSBASE] + p] + x * blk + sl * cap + s] = K[K[K_SC_S] + x]
    nmt = S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]
    for x in range(nmt):
        K[K[K_HMIN] + K[K[K_HMBASE] + p] + x * blk + sl * cap + s] = K[K[K_SC_MN] + x]
        K[K[K_HMAX] + K[K[K_HMBASE] + p] + x * blk + sl * cap + s] = K[K[K_SC_MX] + x]
    if nmt:
        X[K[K_XHX] + K[K[K_HXBASE] + p] + sl * cap + s] = X[K[K_XSC]]


def _snapshots(S, P, K, X, T, i2, r, t, b, mod):
    """The boundary maps of every boundary whose next segment is instance i2, at its new START record."""
    _expire(S, P, K, i2)
    y0, y1 = S[S[INST_PAIR_PTR] + i2], S[S[INST_PAIR_PTR] + i2 + 1]
    pairs = S[INST_PAIR]
    for y in range(y0, y1):
        _snapshot(S, P, K, X, T, S[pairs + y], i2, r, t, b, mod)


def _snapshot(S, P, K, X, T, p, i2, r, t, b, mod):
    """Boundary p's map H at the new START record of instance i2 (row r, time t), every open window."""
    q = S[S[P_Q] + p]
    f = S[S[Q_FRAME] + q]
    cap = K[K[K_CAP] + i2]
    s = K[K[K_N] + i2] & (cap - 1)
    direct = S[S[P_DIRECT] + p]
    prev = S[S[P_PREV] + p]
    seg = S[S[P_SEG] + p]
    if not direct:
        _clear_column(S, K, X, p, q, cap, s)
    m = K[K[K_SLOTS] + f]
    fb = K[K_FB] + FB * f
    sl = K[fb + FB_SLOT] - 1
    w_lo, w_hi = K[fb + FB_LO], K[fb + FB_HI]
    for w in range(w_lo, w_hi + 1):
        sl = sl + 1 if sl + 1 < m else 0
        if prev < 0:
            c, _ = _read_first(S, P, K, X, q, seg, w, sl, b, mod)
        else:
            c, _ = _read_weighted(S, P, K, X, prev, w, sl, mod)
        if direct:
            _direct_add(S, P, K, X, T, q, r, w, sl, c, mod)
        else:
            _store(S, K, X, p, q, cap, s, sl, c)


def _sink_snapshots(S, P, K, X, T, lk, r, b, mod):
    """The boundaries whose next segment is a sink starting at row r (level key lk): their query's
    results += H (x) unit(d), every open window."""
    for y in range(S[S[LK_SP_PTR] + lk], S[S[LK_SP_PTR] + lk + 1]):
        p = S[S[LK_SP] + y]
        q = S[S[P_Q] + p]
        f = S[S[Q_FRAME] + q]
        prev, seg = S[S[P_PREV] + p], S[S[P_SEG] + p]
        m = K[K[K_SLOTS] + f]
        fb = K[K_FB] + FB * f
        sl = K[fb + FB_SLOT] - 1
        w_lo, w_hi = K[fb + FB_LO], K[fb + FB_HI]
        for w in range(w_lo, w_hi + 1):
            sl = sl + 1 if sl + 1 < m else 0
            if prev < 0:
                c, _ = _read_first(S, P, K, X, q, seg, w, sl, b, mod)
            else:
                c, _ = _read_weighted(S, P, K, X, prev, w, sl, mod)
            _direct_add(S, P, K, X, T, q, r, w, sl, c, mod)


def _sink_groups(S, P, K, X, T, lk, r, b, mod):
    """The COUNT(*) queries whose first segment (one read per instance and window) is followed by a
    sink starting at row r (level key lk): per group of one first segment, result += k x read."""
    k = P[P[ROW_K] + r]
    rbase, rtag, rc = K[K_RBASE], K[K_RTAG], K[K_RC]
    rb = K[K[K_TOTBASE] + S[N_INST]]
    sg_q = S[SG_Q]
    for g in range(S[S[LK_SG_PTR] + lk], S[S[LK_SG_PTR] + lk + 1]):
        i = S[S[SG_SEG] + g]
        f = S[S[SG_FRAME] + g]
        m = K[K[K_SLOTS] + f]
        fb = K[K_FB] + FB * f
        sl = K[fb + FB_SLOT] - 1
        y0, y1 = S[S[SG_PTR] + g], S[S[SG_PTR] + g + 1]
        for w in range(K[fb + FB_LO], K[fb + FB_HI] + 1):
            sl = sl + 1 if sl + 1 < m else 0
            ci = _read_instance(S, P, K, X, i, w, sl, b, mod)
            c = K[K[K_CC] + ci] * k
            if mod:
                c %= mod
            _group_add(S, K, T, sg_q + y0, sg_q + y1, rbase, rtag, rc, rb, sl, w, c,
                       k * _segment_total(S, K, T, i, w, sl), mod)


def _group_add(S, K, T, y0, y1, rbase, rtag, rc, rb, sl, w, c, bound, mod):
    """Results (and their bounds) of the queries S[y0:y1] in window w (slot sl) += c (+= bound)."""
    for y in range(y0, y1):
        at_r = K[rbase + S[y]] + sl
        if K[rtag + at_r] != w:
            K[rtag + at_r] = w
            K[rc + at_r] = 0
            T[rb + at_r] = 0.0
        T[rb + at_r] += bound
        if mod:
            K[rc + at_r] = (K[rc + at_r] + c) % mod
        else:
            K[rc + at_r] += c


def _segment_total(S, K, T, i, w, sl):
    """The count total of instance i's full matches in window w (slot sl), 0 when it has none."""
    m = K[K[K_SLOTS] + S[S[INST_FRAME] + i]]
    if K[K[K_TTAG] + K[K[K_WBASE] + i] + sl] != w:
        return 0.0
    return T[K[K[K_TOTBASE] + i] + (_levels(S, i) - 1) * m + sl]


def _direct_add(S, P, K, X, T, q, r, w, sl, c, mod):
    """Result of query q in window w (slot sl) += H (x) unit(d): its last segment is one event type."""
    at_r = K[K[K_RBASE] + q] + sl
    nst = S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]
    nmt = S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]
    ms, mm = K[K_MS], K[K_MM]
    rtag = K[K_RTAG] + at_r
    rb = K[K[K_TOTBASE] + S[N_INST]] + at_r
    if K[rtag] != w:
        K[rtag] = w
        T[rb] = 0.0
        K[K[K_RC] + at_r] = 0
        for x in range(nst):
            K[K[K_RS] + at_r * ms + x] = 0
        for x in range(nmt):
            K[K[K_RMIN] + at_r * mm + x] = NO_MIN
            K[K[K_RMAX] + at_r * mm + x] = NO_MAX
    k = P[P[ROW_K] + r]
    last = S[S[Q_SEG_PTR] + q + 1] - S[S[Q_SEG_PTR] + q] - 1
    T[rb] += k * _bound(S, K, T, q, w, sl, last)  # H <= the product of the totals before d
    rc = K[K_RC] + at_r
    K[rc] = (K[rc] + c * k) % mod if mod else K[rc] + c * k
    for x in range(nst):
        g = S[S[QST_MAP] + (S[S[QST_PTR] + q] + x) * S[MAXR] + last]
        v = _target_value(S, P, g, np.int64(0), r, k) if g >= 0 else 0
        rs = K[K_RS] + at_r * ms + x
        if mod:
            K[rs] = ((K[rs] + K[K[K_SC_S] + x] * k) % mod + c * v) % mod
        else:
            K[rs] += K[K[K_SC_S] + x] * k + c * v
    if nmt and X[K[K_XSC]]:
        for x in range(nmt):
            g = S[S[QMT_MAP] + (S[S[QMT_PTR] + q] + x) * S[MAXR] + last]
            lo, hi = K[K[K_SC_MN] + x], K[K[K_SC_MX] + x]
            if g >= 0:
                rlo, rhi = _row_mm(S, P, g, np.int64(0), r)
                lo, hi = min(lo, rlo), max(hi, rhi)
            K[K[K_RMIN] + at_r * mm + x] = min(K[K[K_RMIN] + at_r * mm + x], lo)
            K[K[K_RMAX] + at_r * mm + x] = max(K[K[K_RMAX] + at_r * mm + x], hi)


# ---------------------------------------------------------------------------------------------
# window closes (step 1) and the output rows
# ---------------------------------------------------------------------------------------------


def _bound(S, K, T, q, w, sl, nseg):
    """An upper bound of query q's count in window w (slot sl) over its first ``nseg`` segments: the
    product of their count totals."""
    bd = 1.0
    for x in range(S[S[Q_SEG_PTR] + q], S[S[Q_SEG_PTR] + q] + nseg):
        bd *= _segment_total(S, K, T, S[S[Q_SEG] + x], w, sl)
    return bd


def _direct_result(S, K, T, OB, o, q, w, sl):
    """Query q's accumulated result in window w (slot sl) into the scratch (and the slot freed)."""
    at_r = K[K[K_RBASE] + q] + sl
    has = K[K[K_RTAG] + at_r] == w
    K[K[K_RTAG] + at_r] = -1
    rb = K[K[K_TOTBASE] + S[N_INST]] + at_r
    OB[o] = T[rb] if has else 0.0
    for x in range(S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]):
        K[K[K_SC_S] + x] = K[K[K_RS] + at_r * K[K_MS] + x] if has else 0
    for x in range(S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]):
        K[K[K_SC_MN] + x] = K[K[K_RMIN] + at_r * K[K_MM] + x] if has else NO_MIN
        K[K[K_SC_MX] + x] = K[K[K_RMAX] + at_r * K[K_MM] + x] if has else NO_MAX
    return K[K[K_RC] + at_r] if has else 0


def _close_query(S, P, K, X, T, O, OB, q, w, sl, b, mod):
    """Query q's result in window w (its last segment's START records read), emitted when it has any."""
    i = S[S[Q_SEG] + S[S[Q_SEG_PTR] + q + 1] - 1]
    if S[S[Q_DIRECT] + q]:
        ci = K[K[K_WBASE] + S[S[INST_REP] + i]] + sl
        nread = K[K[K_WCNT] + ci] if K[K[K_TTAG] + ci] == w else 0
        K[K[K_OPS] + 1] += nread
        c = _direct_result(S, K, T, OB, K[K_OUTN], q, w, sl)
    elif S[S[Q_LAST_PAIR] + q] < 0:
        c, nread = _read_first(S, P, K, X, q, i, w, sl, b, mod)
    else:
        c, nread = _read_weighted(S, P, K, X, S[S[Q_LAST_PAIR] + q], w, sl, mod)
    if nread == 0:
        return
    o = K[K_OUTN]
    O[o, 0] = q
    O[o, 1] = w
    O[o, 2] = c
    if not S[S[Q_DIRECT] + q]:
        OB[o] = _bound(S, K, T, q, w, sl, S[S[Q_SEG_PTR] + q + 1] - S[S[Q_SEG_PTR] + q])
    ms = K[K_MS]
    for x in range(S[S[QST_PTR] + q + 1] - S[S[QST_PTR] + q]):
        O[o, 3 + x] = K[K[K_SC_S] + x]
    for x in range(S[S[QMT_PTR] + q + 1] - S[S[QMT_PTR] + q]):
        O[o, 3 + ms + x] = K[K[K_SC_MN] + x]
        O[o, 3 + ms + K[K_MM] + x] = K[K[K_SC_MX] + x]
    K[K_OUTN] = o + 1


def _close(S, P, K, X, T, O, OB, f, w0, w1, b, mod):
    """Close windows w0..w1 of frame f: those holding START records made since the last close."""
    first = K[K[K_FSTART] + f]
    if first < 0:
        return
    last = K[K[K_FLAST] + f]
    for w in range(max(w0, k_lo(P, f, first)), min(w1, k_hi(P, f, last)) + 1):
        sl = w % K[K[K_SLOTS] + f]
        for x in range(S[S[F_Q_PTR] + f], S[S[F_Q_PTR] + f + 1]):
            _close_query(S, P, K, X, T, O, OB, S[S[F_Q] + x], w, sl, b, mod)
    nxt = w_start(P, f, w1 + 1)
    K[K[K_FSTART] + f] = -1 if last < nxt else max(first, nxt)


# ---------------------------------------------------------------------------------------------
# the batch loop
# ---------------------------------------------------------------------------------------------


def _batch_tasks(S, P, K, b):
    """The level updates of batch b as (level, instance, row) in K's task buffer, level descending."""
    buf = K[K_BUF]
    nt = 0
    for r in range(P[P[ROW_PTR] + b], P[P[ROW_PTR] + b + 1]):
        lk = P[P[ROW_LK] + r]
        for x in range(S[S[LK_IL_PTR] + lk], S[S[LK_IL_PTR] + lk + 1]):
            il = S[S[LK_IL] + x]
            y = buf + 3 * nt
            K[y], K[y + 1], K[y + 2] = S[S[IL_J] + il], S[S[IL_INST] + il], r
            while y > buf and K[y - 3] < K[y]:  # insertion by level
                for z in range(3):
                    K[y - 3 + z], K[y + z] = K[y + z], K[y - 3 + z]
                y -= 3
            nt += 1
    return nt


def run(S, P, K, X, T, O, OB, mod):
    """Every batch of the partition, then the remaining windows; the state (:func:`alloc`) is updated in
    place. Emits rows of O (query, window, count, sums..., mins..., maxs...) and their count bounds OB.
    Returns (rows emitted, update operations, combine operations)."""
    nb = P[NB]
    buf = K[K_BUF]
    for b in range(nb):
        t = P[P[BTS] + b]
        _frame_batch(P, K, t)
        # 1. windows ending at or before t close
        for f in range(P[NF]):
            lim = K[K[K_FB] + FB * f + FB_LO] - 1
            nk = K[K_NEXT_K] + f
            if lim >= K[nk]:
                _close(S, P, K, X, T, O, OB, f, K[nk], lim, b, mod)
                K[nk] = lim + 1
        # 2. boundary snapshots at the new START records (state before t)
        for r in range(P[P[ROW_PTR] + b], P[P[ROW_PTR] + b + 1]):
            lk = P[P[ROW_LK] + r]
            for x in range(S[S[LK_ST_PTR] + lk], S[S[LK_ST_PTR] + lk + 1]):
                _snapshots(S, P, K, X, T, S[S[LK_ST] + x], r, t, b, mod)
            _sink_snapshots(S, P, K, X, T, lk, r, b, mod)
            _sink_groups(S, P, K, X, T, lk, r, b, mod)
        # 3. level updates, last level first
        for y in range(_batch_tasks(S, P, K, b)):
            _update(S, P, K, X, T, K[buf + 3 * y + 1], K[buf + 3 * y], K[buf + 3 * y + 2], t, mod)
        # 4. new START records
        for r in range(P[P[ROW_PTR] + b], P[P[ROW_PTR] + b + 1]):
            lk = P[P[ROW_LK] + r]
            for x in range(S[S[LK_ST_PTR] + lk], S[S[LK_ST_PTR] + lk + 1]):
                _add_start(S, P, K, X, T, S[S[LK_ST] + x], r, t)
            _sink_starts(S, P, K, T, lk, r, t)
    if nb:
        for f in range(P[NF]):
            _close(S, P, K, X, T, O, OB, f, K[K[K_NEXT_K] + f], k_hi(P, f, P[P[BTS] + nb - 1]), nb, mod)
    return K[K_OUTN], K[K[K_OPS]], K[K[K_OPS] + 1]


# ---------------------------------------------------------------------------------------------
# compiled or plain
# ---------------------------------------------------------------------------------------------


def namespace(jit: bool) -> dict:
    """This module's functions compiled by numba (cache=True) when ``jit``, else the plain ones."""
    return _jitted() if jit else globals()


_JIT: dict | None = None
_INLINE = {"k_lo", "k_hi", "w_start", "_levels", "_pieces", "_target_value", "_row_mm", "_total", "_expire", "_lower",
           "_segment_total", "_group_add",
           "_snapshots", "_read_first", "_snapshot", "_direct_add", "_add_start", "_read_instance"}


def _jitted() -> dict:
    global _JIT
    if _JIT is None:
        import numba

        g = dict(globals())
        for name, fn in list(g.items()):
            if isinstance(fn, types.FunctionType) and fn.__module__ == __name__ and name not in (
                    "namespace", "_jitted", "pack", "alloc", "max_rows", "_excl"):
                # entry points: run (no allocation, no reference counting) and capacities (allocates)
                opts = {} if name in ("run", "capacities") else {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
                if name in _INLINE:
                    opts["inline"] = "always"
                g[name] = numba.njit(cache=True, error_model="numpy", _nrt=name == "capacities", **opts)(
                    types.FunctionType(fn.__code__, g, name, fn.__defaults__))
        _JIT = g
    return _JIT
