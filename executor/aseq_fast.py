"""Chunked, vectorized Sharon / A-Seq kernel for COUNT(*) workloads (sharon.md §7.3-7.4; same results
and operation counts as :mod:`cepopt.executor.sharon_kernel`).

Why chunks: a NumPy call costs microseconds whatever it holds, so a kernel that steps batch by batch
is paced by call overhead, not by the count updates the cost model counts. Here a partition is cut
into chunks of time-stamp batches (whole slides of the finest window, merged until a chunk holds
``MIN_EVENTS`` events, split past ``MAX_BATCHES`` batches) and
each chunk is processed level by level: the Python work is per (chunk, column space, level).

Column space: instances whose first position has the same type, filters and window share their START
records (one column per START batch). Over a chunk, level j of an instance at its event batches is

    V_j[e, c] = V_j(before the chunk)[c] + sum_{e' <= e} k_e' * V_{j-1}[c](just before e')

V_{j-1} just before e' is a row of the previous level's chunk matrix (or the carried state), so an
event never extends a match at its own time stamp. The instances of a space are stacked (one
segmented cumulative sum), so a level is a handful of NumPy calls for all of them, and the array work
is the live START records times the level's events: the update count.

Reads (boundary snapshots of §7.4, window closes) are masked sums of gathered V rows, times the
boundary map H[pair][column, window slot] of the previous boundary, stored per space. In a chunk the
boundaries run in chain order (k = 1, 2, ...); then the windows ending before the next chunk close.
When a query's last segment is one event type, Full(d) is fixed when d arrives, so the snapshot adds
k_d x H to the query's window results at once (the incremental variant of §7.4) and that map is never
stored; the close still counts the START records it stands for.

Exactness: int64 under bounds (counts never decrease, so a chunk's last row bounds every column);
when a level or a read could leave int64 (``aseq._INT64_SAFE``) the kernel raises :class:`Fallback`
and the caller reruns the partition with the general kernel (Python ints). Stacked cumulative sums
may wrap in int64; the per-instance differences are exact modulo 2^64 and in range.

Operation counts: "update" = k x live START records per (instance, level >= 2, batch with events),
plus k per START; "combine" = START records read per (boundary pair or closing query, window), a
query's first segment read once per (instance, window, batch), as in the general kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cepopt.executor import aseq as _aseq
from cepopt.executor.aseq import (
    Frame,
    PartitionEvents,
    filter_mask,
    group_of,
    position_filters,
    query_targets,
    query_types,
)
from cepopt.executor.results import AggAccumulator
from cepopt.model import Query

__all__ = ["MAX_BATCHES", "MIN_EVENTS", "Fallback", "eligible", "fast_partition"]

#: a chunk holds whole window slides, merged until it has MIN_EVENTS events (on sparse streams the
#: calls per chunk, not the array work, would set the time) and cut every MAX_BATCHES batches
#: (smaller matrices, fewer START columns that are not live yet)
MIN_EVENTS = 4096
MAX_BATCHES = 4096


class Fallback(Exception):
    """The partition needs the general kernel (counts could leave int64)."""


def eligible(queries: Sequence[Query]) -> bool:
    """True when every query only asks COUNT(*) (no per-target state)."""
    return all(not query_targets(q) for q in queries)


def _filter_sig(filters) -> tuple:
    return tuple(sorted((f.attr, f.op, repr(f.value)) for f in filters))


_CACHE: dict[tuple, tuple] = {}


def _static(queries: Sequence[Query], plan) -> dict:
    """The partition-independent structure of (queries, plan): instances, spaces, boundary pairs."""
    ck = (tuple(id(q) for q in queries), id(plan))
    hit = _CACHE.get(ck)
    if hit is not None:
        return hit[2]
    from cepopt.errors import CepoptError
    from cepopt.executor.sharon_kernel import plan_segments

    segs = plan_segments(queries, plan)
    inst_ids: dict[tuple, int] = {}
    inst_lk: list[list[tuple]] = []
    inst_fid: list[int] = []
    lk_filters: dict[tuple, list] = {}
    wids: dict = {}
    frame_queries: list[Query] = []
    for q in queries:
        if q.window not in wids:
            wids[q.window] = len(frame_queries)
            frame_queries.append(q)
        types, pf = query_types(q), position_filters(q)
        for s, e, k in segs[q.name]:
            lks = [(t, _filter_sig(f)) for t, f in zip(types[s:e], pf[s:e], strict=True)]
            for lk, f in zip(lks, pf[s:e], strict=True):
                lk_filters.setdefault(lk, f)
            if k not in inst_ids:
                inst_ids[k] = len(inst_lk)
                inst_lk.append(lks)
                inst_fid.append(wids[q.window])
            i = inst_ids[k]
            if inst_lk[i] != lks:
                raise CepoptError(f"queries sharing {','.join(types[s:e])} have different filters on it")
            if inst_fid[i] != wids[q.window]:
                raise CepoptError(f"queries sharing {','.join(types[s:e])} have different windows")
    # column spaces: (first level, frame)
    space_ids: dict[tuple, int] = {}
    spaces: list[dict] = []
    inst_space, inst_local = [], []
    for i, lks in enumerate(inst_lk):
        sk = (lks[0], inst_fid[i])
        if sk not in space_ids:
            space_ids[sk] = len(spaces)
            spaces.append({"lk0": lks[0], "fid": inst_fid[i], "insts": []})
        sp = spaces[space_ids[sk]]
        inst_space.append(space_ids[sk])
        inst_local.append(len(sp["insts"]))
        sp["insts"].append(i)
    for sp in spaces:
        hs = [len(inst_lk[i]) for i in sp["insts"]]
        sp["hmax"] = max(hs)
        # members of level j (h > j), their level keys, and their position in level j-1
        sp["members"], sp["lks"], sp["posprev"] = {}, {}, {}
        for j in range(1, sp["hmax"]):
            mem = [li for li, h in enumerate(hs) if h > j]
            sp["members"][j] = np.asarray(mem, dtype=np.int64)
            sp["lks"][j] = [inst_lk[sp["insts"][li]][j] for li in mem]
            if j > 1:
                prev = {li: p for p, li in enumerate(sp["members"][j - 1].tolist())}
                sp["posprev"][j] = np.asarray([prev[li] for li in mem], dtype=np.int64)
        # last level of each local instance and its position there
        sp["jl"] = np.asarray([h - 1 for h in hs], dtype=np.int64)
        sp["pl"] = np.asarray([li if hs[li] == 1 else sp["members"][hs[li] - 1].tolist().index(li)
                               for li in range(len(hs))], dtype=np.int64)
        sp["n_pairs"] = 0
    # boundary pairs (query, k): H lives in the space of Seg_{k+1}
    # a query whose last segment is one event type adds k x H to its windows' results at the snapshot
    # (the incremental variant of §7.4): that boundary map is never stored
    pair_seg, pair_nxt, pair_prev, pair_level, pair_local, pair_fid, pair_q = [], [], [], [], [], [], []
    q_last, q_pair, q_fid, q_direct = [], [], [], []
    for qi, q in enumerate(queries):
        chain = [inst_ids[k] for _, _, k in segs[q.name]]
        prev = -1
        direct = len(chain) > 1 and len(inst_lk[chain[-1]]) == 1
        for k in range(1, len(chain)):
            sp = spaces[inst_space[chain[k]]]
            pair_seg.append(chain[k - 1])
            pair_nxt.append(chain[k])
            pair_prev.append(prev)
            pair_level.append(k)
            pair_fid.append(wids[q.window])
            pair_q.append(qi)
            if direct and k == len(chain) - 1:
                pair_local.append(-1)
            else:
                pair_local.append(sp["n_pairs"])
                sp["n_pairs"] += 1
            prev = len(pair_seg) - 1
        q_last.append(chain[-1])
        q_pair.append(prev)
        q_fid.append(wids[q.window])
        q_direct.append(direct)
    arr = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    pair_level = arr(pair_level)
    st = {"names": [q.name for q in queries], "frame_queries": frame_queries, "spaces": spaces,
          "lk_filters": lk_filters, "inst_space": arr(inst_space), "inst_local": arr(inst_local),
          "pair_seg": arr(pair_seg), "pair_nxt": arr(pair_nxt), "pair_prev": arr(pair_prev),
          "pair_local": arr(pair_local), "pair_fid": arr(pair_fid), "pair_q": arr(pair_q),
          "levels": [np.flatnonzero(pair_level == k) for k in range(1, int(pair_level.max(initial=0)) + 1)],
          "q_last": arr(q_last), "q_pair": arr(q_pair), "q_fid": arr(q_fid),
          "q_direct": np.asarray(q_direct, dtype=bool)}
    if len(_CACHE) > 16:
        _CACHE.clear()
    # the key objects stay referenced, so their ids cannot be reused while the entry lives
    _CACHE[ck] = (list(queries), plan, st)
    return st


def _klo_khi(fr: Frame, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last window containing each time stamp."""
    if fr.exact:
        x = ts - fr.offset
        return np.maximum(0, (x - fr.length) // fr.slide + 1), x // fr.slide
    return (np.asarray([fr.k_lo(int(t)) for t in ts], dtype=np.int64),
            np.asarray([fr.k_hi(int(t)) for t in ts], dtype=np.int64))


def _starts(fr: Frame, ks: np.ndarray) -> np.ndarray:
    if fr.exact:
        return ks * fr.slide + fr.offset
    return np.asarray([fr.start(int(k)) for k in ks], dtype=np.int64)


def _ends(fr: Frame, ks: np.ndarray) -> np.ndarray:
    if fr.exact:
        return ks * fr.slide + fr.length + fr.offset
    return np.asarray([fr.end(int(k)) for k in ks], dtype=np.int64)


def _ranges(lo: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each i, lo[i] .. lo[i]+n[i]-1, concatenated; and the index i of each element."""
    owner = np.repeat(np.arange(len(n)), n)
    first = np.cumsum(n) - n
    return lo[owner] + np.arange(int(n.sum())) - first[owner], owner


def fast_partition(queries: Sequence[Query], plan, events, key: dict | None = None):
    """Like :func:`cepopt.executor.sharon_kernel.sharon_partition` for COUNT(*) queries; raises
    :class:`Fallback` when int64 could overflow."""
    ev = events if isinstance(events, PartitionEvents) else PartitionEvents(events)
    run = _Run(queries, _static(queries, plan), ev, key or {})
    if len(ev):
        run.execute()
    return run.accs, run.ops


class _Run:
    """One partition's execution (state per column space, carried from chunk to chunk)."""

    def __init__(self, queries: Sequence[Query], st: dict, ev: PartitionEvents, key: dict):
        self.st, self.ev = st, ev
        self.safe = float(_aseq._INT64_SAFE)
        self.queries = list(queries)
        self.accs = {q.name: AggAccumulator(q) for q in queries}
        self.groups = [group_of(q, key) for q in queries]
        self.ops = {"update": 0, "combine": 0}
        # one frame per distinct window (a window without SLIDE depends on the partition's span)
        self.flist = [Frame.of(q, ev) for q in st["frame_queries"]]
        self.bts = ev.batch_ts.astype(np.int64)
        self.nb = len(self.bts)
        self.lv: dict[tuple, tuple] = {}
        # event indices per type, in time order
        codes, names = (ev.df["type"].astype(str).factorize() if len(ev) else (np.zeros(0, dtype=np.int64), []))
        order = np.argsort(codes, kind="stable")
        cuts = np.searchsorted(codes[order], np.arange(len(names) + 1))
        self.by_type = {str(t): order[cuts[i]:cuts[i + 1]] for i, t in enumerate(names)}

    # ------------------------------------------------------------------ set-up
    def _level(self, lk):
        """Batches holding events of level key ``lk`` and their numbers of events."""
        hit = self.lv.get(lk)
        if hit is None:
            idx = self.by_type.get(lk[0], np.zeros(0, dtype=np.int64))
            filters = self.st["lk_filters"][lk]
            if filters and len(idx):
                idx = idx[filter_mask(self.ev, filters)[idx]]
            b = self.ev.batch_of[idx]
            if len(b):
                first = np.flatnonzero(np.concatenate(([True], b[1:] != b[:-1])))
                hit = (b[first].astype(np.int64), np.diff(np.append(first, len(b))).astype(np.int64))
            else:
                hit = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
            self.lv[lk] = hit
        return hit

    def _chunks(self) -> None:
        nb = self.nb
        fr = min(self.flist, key=lambda f: f.slide)
        g = _klo_khi(fr, self.bts)[1]
        newg = np.ones(nb, dtype=bool)
        newg[1:] = g[1:] != g[:-1]
        # whole slides, merged up to MIN_EVENTS events, split past MAX_BATCHES batches
        first_event = self.ev.starts
        cuts = [0]
        for a in np.flatnonzero(newg)[1:].tolist():
            if first_event[a] - first_event[cuts[-1]] >= MIN_EVENTS:
                cuts.append(a)
        cut = np.zeros(nb, dtype=bool)
        for a, e in zip(cuts, cuts[1:] + [nb], strict=True):
            cut[a:e:MAX_BATCHES] = True
        self.chunk_of = np.cumsum(cut) - 1
        self.chunk_lo = np.flatnonzero(cut)
        self.n_chunks = len(self.chunk_lo)
        # per frame and batch: the oldest live START time (start of the first window holding the batch)
        self.live_lo = [_starts(f, _klo_khi(f, self.bts)[0]) for f in self.flist]

    def _spaces(self) -> None:
        """Per space: all START columns of the partition, and its level events sorted by (chunk, member, batch)."""
        nch = self.n_chunks
        self.sp = []
        for sp in self.st["spaces"]:
            fr = self.flist[sp["fid"]]
            cb, ck = self._level(sp["lk0"])
            s = {"cb": cb, "ck": ck, "cts": self.bts[cb], "off": 0, "end": 0,
                 "cptr": np.searchsorted(self.chunk_of[cb], np.arange(nch + 1)), "n_inst": len(sp["insts"]),
                 "carry": {}, "lev": {}, "H": None, "m": fr.slots, "fid": sp["fid"]}
            s["klo"], s["khi"] = _klo_khi(fr, s["cts"])
            for j in range(1, sp["hmax"]):
                parts = [self._level(lk) for lk in sp["lks"][j]]
                b = np.concatenate([p[0] for p in parts])
                k = np.concatenate([p[1] for p in parts])
                pos = np.repeat(np.arange(len(parts)), [len(p[0]) for p in parts])
                ch = self.chunk_of[b]
                order = np.lexsort((b, pos, ch))
                b, k, pos, ch = b[order], k[order], pos[order], ch[order]
                s["lev"][j] = (b, k, pos, np.searchsorted(ch, np.arange(nch + 1)))
                s["carry"][j] = np.zeros((len(parts), 0), dtype=np.int64)
            if sp["n_pairs"]:
                s["H"] = np.zeros((sp["n_pairs"], 0, fr.slots), dtype=np.int64)
            self.sp.append(s)
        # every space's columns in one table (boundary requests span spaces)
        sizes = np.asarray([len(s["cb"]) for s in self.sp], dtype=np.int64)
        self.gbase = np.cumsum(sizes) - sizes
        self.g_cb, self.g_klo, self.g_khi = (np.concatenate([s[k] for s in self.sp]) for k in ("cb", "klo", "khi"))
        self.n_new = np.zeros(len(self.sp), dtype=np.int64)
        self.new_lo = np.zeros(len(self.sp), dtype=np.int64)
        # (space, time) keys of all columns: START records of a space in a time range, in one call
        self.t0, self.span = int(self.bts[0]), int(self.bts[-1] - self.bts[0]) + 2
        self.g_key = np.repeat(np.arange(len(self.sp)), sizes) * self.span + (self.bts[self.g_cb] - self.t0)
        self.g_ck = np.concatenate([s["ck"] for s in self.sp])
        # results of the queries with a direct last boundary, per (query, window - first window)
        self.wbase = [int(_klo_khi(f, self.bts[:1])[0][0]) for f in self.flist]
        nw = max(int(_klo_khi(f, self.bts[-1:])[1][0]) - b + 1 for f, b in zip(self.flist, self.wbase, strict=True))
        nq = len(self.queries)
        self.dres = np.zeros((nq, nw), dtype=np.int64) if self.st["q_direct"].any() else None
        self.dres_f = np.zeros((nq, nw)) if self.dres is not None else None

    def _count(self, space: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Columns of ``space`` with lo <= time < hi."""
        base = space * self.span - self.t0
        return (np.searchsorted(self.g_key, base + np.clip(hi, self.t0, self.t0 + self.span - 1), side="left")
                - np.searchsorted(self.g_key, base + np.clip(lo, self.t0, self.t0 + self.span - 1), side="left"))

    # ------------------------------------------------------------------ main loop
    def execute(self) -> None:
        st = self.st
        self._chunks()
        self._spaces()
        self.next_k = [0] * len(self.flist)
        for c in range(self.n_chunks):
            b0 = int(self.chunk_lo[c])
            b1 = int(self.chunk_lo[c + 1]) if c + 1 < self.n_chunks else self.nb
            for si, s in enumerate(self.sp):
                self._advance(si, s, c, b0, b1)
            for pk in st["levels"]:
                self._boundaries(pk)
            t_next = int(self.bts[b1]) if b1 < self.nb else None
            for f in range(len(self.flist)):
                self._close(f, t_next)

    def _advance(self, si: int, s: dict, c: int, b0: int, b1: int) -> None:
        """Expire old columns, add the chunk's START columns and compute every level over the chunk."""
        spec = self.st["spaces"][si]
        old_off, old_end = s["off"], s["end"]
        lo = self.live_lo[s["fid"]][b0]
        off = max(old_off, int(np.searchsorted(s["cts"], lo, side="left")))
        end = int(s["cptr"][c + 1])
        off = min(off, end)
        s["off"], s["end"] = off, end
        self.new_lo[si], self.n_new[si] = old_end, end - old_end
        cut, grow = off - old_off, end - old_end
        if grow:
            self.ops["update"] += int(s["ck"][old_end:end].sum()) * s["n_inst"]
        if spec["hmax"] == 1 and s["H"] is None:
            s["P"], s["vmax"] = {}, {0: float(s["ck"][off:end].max()) if end > off else 0.0}
            return
        C = end - off
        if cut or grow:
            for j, car in s["carry"].items():
                s["carry"][j] = _shift(car, cut, grow)
            if s["H"] is not None:
                s["H"] = _shift(s["H"], cut, grow)
        colb, colk = s["cb"][off:end], s["ck"][off:end]
        s["P"] = {}
        vmax = {0: float(colk.max()) if C else 0.0}
        for j in range(1, spec["hmax"]):
            b_all, k_all, pos_all, ptr = s["lev"][j]
            a, e = int(ptr[c]), int(ptr[c + 1])
            carry = s["carry"][j]
            nl = len(carry)
            if e == a or C == 0:
                s["P"][j] = (carry, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
                vmax[j] = float(carry.max()) if carry.size else 0.0
                continue
            b, k, pos = b_all[a:e], k_all[a:e], pos_all[a:e]
            E = e - a
            # updates: k x live START records (at or after the oldest open window, before the batch)
            live = np.searchsorted(s["cb"], b, side="left") - np.searchsorted(
                s["cts"], self.live_lo[s["fid"]][b], side="left")
            self.ops["update"] += int((k * live).sum())
            first = np.flatnonzero(np.concatenate(([True], pos[1:] != pos[:-1])))
            ksum = np.add.reduceat(k, first)
            bound = (float(carry.max()) if carry.size else 0.0) + float(ksum.max()) * vmax[j - 1]
            if bound >= self.safe:
                raise Fallback
            mat = np.empty((nl + E, C), dtype=np.int64)
            mat[:nl] = carry
            body = mat[nl:]
            if j == 1:
                np.multiply(np.greater.outer(b, colb), colk, out=body)
            else:
                idx = self._lookup(s, j - 1, spec["posprev"][j][pos], b)
                np.take(s["P"][j - 1][0], idx, axis=0, out=body)
            body *= k[:, None]
            # segmented cumulative sum: each member's run starts from its carried row
            sums = np.add.reduceat(body, first, axis=0)
            base = carry[pos[first]]
            adj = base.copy()
            adj[1:] -= base[:-1] + sums[:-1]
            body[first] += adj
            np.cumsum(body, axis=0, out=body)
            last = np.append(first[1:], E) - 1
            new = carry.copy()
            new[pos[last]] = body[last]
            s["carry"][j] = new
            s["P"][j] = (mat, pos * (self.nb + 1) + b, pos)
            vmax[j] = float(new.max())
        s["vmax"] = vmax

    def _lookup(self, s: dict, j: int, pos: np.ndarray, b_lt: np.ndarray) -> np.ndarray:
        """Row of level j's chunk matrix holding member ``pos``'s counts just before batch ``b_lt``."""
        _, keys, epos = s["P"][j]
        nl = len(s["carry"][j])
        if not len(keys):
            return pos
        idx = np.searchsorted(keys, pos * (self.nb + 1) + b_lt, side="left") - 1
        ok = idx >= 0
        ok[ok] = epos[idx[ok]] == pos[ok]
        return np.where(ok, nl + idx, pos)

    def _read(self, inst: np.ndarray, b_lt: np.ndarray, wstart: np.ndarray, wpair: np.ndarray | None,
              slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per request: sum over the START columns c of ``inst`` with wstart <= c.time, c before b_lt, of
        Full(c) just before b_lt, times H[wpair][c, slot] when wpair >= 0; and the columns read."""
        st = self.st
        out = np.zeros(len(inst), dtype=np.int64)
        nread = np.zeros(len(inst), dtype=np.int64)
        space = st["inst_space"][inst]
        li = st["inst_local"][inst]
        for si in np.unique(space).tolist():
            s, spec = self.sp[si], st["spaces"][si]
            in_s = np.flatnonzero(space == si)
            jl_s = spec["jl"][li[in_s]]
            for jl in np.unique(jl_s).tolist():
                sel = in_s[jl_s == jl]
                off, end = s["off"], s["end"]
                nread[sel] = np.searchsorted(s["cb"], b_lt[sel], side="left") - np.searchsorted(
                    s["cts"], wstart[sel], side="left")
                if end == off:
                    continue
                colb, colk, cts = s["cb"][off:end], s["ck"][off:end], s["cts"][off:end]
                if jl == 0:
                    rows = np.multiply(np.greater.outer(b_lt[sel], colb), colk)
                else:
                    rows = s["P"][jl][0][self._lookup(s, jl, spec["pl"][li[sel]], b_lt[sel])]
                rows *= np.less_equal.outer(wstart[sel], cts)
                wp = None if wpair is None else wpair[sel]
                if wp is not None and (wp >= 0).any():
                    has = wp >= 0
                    H = self.sp[si]["H"]
                    w = np.ones_like(rows)
                    w[has] = H[st["pair_local"][wp[has]], :, slot[sel][has]]
                    bound = (end - off) * s["vmax"][jl] * float(w.max())
                    if bound >= self.safe and float((rows.astype(np.float64) * w).sum(axis=1).max()) >= self.safe:
                        raise Fallback
                    rows *= w
                elif (end - off) * s["vmax"][jl] >= self.safe and float(
                        rows.astype(np.float64).sum(axis=1).max()) >= self.safe:
                    raise Fallback
                out[sel] = rows.sum(axis=1)
        return out, nread

    def _boundaries(self, pk: np.ndarray) -> None:
        """Boundary maps of the pairs ``pk`` (one chain level) at the chunk's new START columns."""
        st = self.st
        nsp = st["inst_space"][st["pair_nxt"][pk]]
        n = self.n_new[nsp]
        keep = n > 0
        if not keep.any():
            return
        pk, nsp, n = pk[keep], nsp[keep], n[keep]
        col, owner = _ranges(self.new_lo[nsp], n)
        gcol = self.gbase[nsp][owner] + col
        # every window of each new column
        klo = self.g_klo[gcol]
        w, o2 = _ranges(klo, self.g_khi[gcol] - klo + 1)
        p, gcol, col, sp_of = pk[owner][o2], gcol[o2], col[o2], nsp[owner][o2]
        b = self.g_cb[gcol]
        wstart, slot = self._window_of(st["pair_fid"][p], w)
        seg = st["pair_seg"][p]
        prev = st["pair_prev"][p]
        if prev[0] < 0:
            # Seg_1 reads depend only on (instance, batch, window): once per triple (spec §7.4)
            wmin = int(w.min())
            code = (seg * (self.nb + 1) + b) * (int(w.max()) - wmin + 1) + (w - wmin)
            _, first, inv = np.unique(code, return_index=True, return_inverse=True)
            val, nread = self._read(seg[first], b[first], wstart[first], None, slot[first])
            val = val[inv.reshape(-1)]
        else:
            val, nread = self._read(seg, b, wstart, prev, slot)
        self.ops["combine"] += int(nread.sum())
        direct = st["pair_local"][p] < 0
        if direct.any():
            q, wi = st["pair_q"][p[direct]], w[direct] - np.asarray(self.wbase)[st["pair_fid"][p[direct]]]
            kd = self.g_ck[gcol[direct]]
            np.add.at(self.dres, (q, wi), kd * val[direct])
            np.add.at(self.dres_f, (q, wi), kd.astype(np.float64) * val[direct])
            if float(self.dres_f.max()) >= self.safe:
                raise Fallback
            keep = ~direct
            if not keep.any():
                return
            p, col, slot, val, sp_of = p[keep], col[keep], slot[keep], val[keep], sp_of[keep]
        if len(self.flist) == 1 and (sp_of == sp_of[0]).all():
            groups = [(int(sp_of[0]), slice(None))]
        else:
            groups = [(si, sp_of == si) for si in np.unique(sp_of).tolist()]
        for si, m in groups:
            s = self.sp[si]
            s["H"][st["pair_local"][p[m]], col[m] - s["off"], slot[m]] = val[m]

    def _window_of(self, fid: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Start time and map slot of windows ``w`` of frames ``fid``."""
        if len(self.flist) == 1:
            fr = self.flist[0]
            return _starts(fr, w), w % fr.slots
        wstart = np.empty(len(w), dtype=np.int64)
        slot = np.empty(len(w), dtype=np.int64)
        for f in np.unique(fid).tolist():
            m = fid == f
            wstart[m] = _starts(self.flist[f], w[m])
            slot[m] = w[m] % self.flist[f].slots
        return wstart, slot

    def _close(self, f: int, t_next: int | None) -> None:
        """Close the windows of frame ``f`` that end at or before ``t_next`` (all when None)."""
        st = self.st
        fr = self.flist[f]
        qs = np.flatnonzero(st["q_fid"] == f)
        spaces = np.unique(st["inst_space"][st["q_last"][qs]]).tolist()
        live = [self.sp[si] for si in spaces if self.sp[si]["end"] > self.sp[si]["off"]]
        his = [int(s["khi"][s["end"] - 1]) for s in live]
        limit = fr.k_lo(t_next) - 1 if t_next is not None else max(his, default=-1)
        first = max([self.next_k[f]] + [min(int(s["klo"][s["off"]]) for s in live)] if live else [self.next_k[f]])
        last = min(limit, max(his, default=-1))
        if t_next is not None:
            self.next_k[f] = max(self.next_k[f], limit + 1)
        if last < first:
            return
        ws = np.arange(first, last + 1, dtype=np.int64)
        b_lt = np.searchsorted(self.bts, _ends(fr, ws), side="left")
        wstart = _starts(fr, ws)
        direct = qs[st["q_direct"][qs]]
        if len(direct):
            # results were added at the snapshots; the close reads the last segment's START records
            res = self.dres[direct][:, ws - self.wbase[f]]
            sp = np.repeat(st["inst_space"][st["q_last"][direct]], len(ws))
            self.ops["combine"] += int(self._count(sp, np.tile(wstart, len(direct)),
                                                   np.tile(_ends(fr, ws), len(direct))).sum())
            self._emit(direct, ws, res)
            qs = qs[~st["q_direct"][qs]]
            if not len(qs):
                return
        single = qs[st["q_pair"][qs] < 0]
        multi = qs[st["q_pair"][qs] >= 0]
        # single-segment queries on one instance read it once per window
        u_inst, u_inv = np.unique(st["q_last"][single], return_inverse=True)
        rq = np.concatenate([np.repeat(u_inst, len(ws)), np.repeat(st["q_last"][multi], len(ws))])
        rp = np.concatenate([np.full(len(u_inst) * len(ws), -1), np.repeat(st["q_pair"][multi], len(ws))])
        rw = np.tile(np.arange(len(ws)), len(u_inst) + len(multi))
        val, nread = self._read(rq, b_lt[rw], wstart[rw], rp, ws[rw] % fr.slots)
        self.ops["combine"] += int(nread.sum())
        val = val.reshape(-1, len(ws))
        self._emit(np.concatenate([single, multi]), ws, np.concatenate([val[:len(u_inst)][u_inv.reshape(-1)],
                                                                        val[len(u_inst):]]))

    def _emit(self, qs: np.ndarray, ws: np.ndarray, res: np.ndarray) -> None:
        """Add the non-zero results res[query, window] to the accumulators."""
        qi_all, wi_all = np.nonzero(res > 0)
        vals = res[qi_all, wi_all].tolist()
        for qi, wi, v in zip(qs[qi_all].tolist(), ws[wi_all].tolist(), vals, strict=True):
            self.accs[self.queries[qi].name].add(self.groups[qi], wi, v, {})


def _shift(a: np.ndarray, cut: int, grow: int) -> np.ndarray:
    """Drop the first ``cut`` columns (axis 1) and append ``grow`` zero columns."""
    shape = list(a.shape)
    shape[1] = a.shape[1] - cut + grow
    out = np.zeros(shape, dtype=a.dtype)
    out[:, :a.shape[1] - cut] = a[:, cut:]
    return out
