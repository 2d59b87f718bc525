"""Numba kernels for Go: captures, legality, superko, scoring, leaves, playouts.

Boards are flat int8 arrays of N*N points (+1 black, -1 white, 0 empty),
row-major with row 0 at the top. Groups are found by breadth-first fill;
`mark` (int64 [N*N]) and `gen` (int64 [1]) let a fill tell visited points from
unvisited ones without clearing anything: each fill takes a fresh generation
number, and marks only ever grow. Positional superko compares Zobrist hashes
of whole boards (no side to move): the empty board hashes to 0 and a stone of
colour c on point p xors in `zobrist[0 if c == 1 else 1, p]`.

A batch's arrays (see `GoBatch` in go.py):
    history  # [B, M+1, N*N] int8, board after t moves, t = 0..length
    hashes   # [B, M+1] uint64, Zobrist hash of history[b, t]
    length   # [B] int32, moves played (passes included)
    passes   # [B] int8, consecutive passes at the end of the game
    to_play  # [B] int8, +1 black / -1 white
"""

from __future__ import annotations

import numba
import numpy as np

LEGAL, OCCUPIED, SUICIDE, SUPERKO = 0, 1, 2, 3
REASONS = {OCCUPIED: "occupied", SUICIDE: "suicide", SUPERKO: "superko"}
HISTORY_PLANES = 8  # boards of history per colour in the network input (paper: 8)
# With game.liberty_planes (KataGo's liberty features, Wu 2019): after the paper's 17 planes, the side to
# move's stones in groups of 1, 2 and 3 or more liberties, then the opponent's.
LIBERTY_PLANES = 6
ZOBRIST_SEED = 20171019  # fixed, so a position's hash is the same in every process


def neighbour_tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Orthogonal and diagonal neighbours of each point, int32 [N*N, 4], padded with -1."""
    nn = size * size
    nbrs = np.full((nn, 4), -1, np.int32)
    diags = np.full((nn, 4), -1, np.int32)
    for p in range(nn):
        r, c = divmod(p, size)
        k = 0
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= r + dr < size and 0 <= c + dc < size:
                nbrs[p, k] = (r + dr) * size + c + dc
                k += 1
        k = 0
        for dr, dc in ((-1, -1), (-1, 1), (1, -1), (1, 1)):
            if 0 <= r + dr < size and 0 <= c + dc < size:
                diags[p, k] = (r + dr) * size + c + dc
                k += 1
    return nbrs, diags


def zobrist_table(size: int) -> np.ndarray:
    """uint64 [2, N*N] random keys (black row 0, white row 1) from a fixed seed."""
    rng = np.random.default_rng(ZOBRIST_SEED + size)
    return rng.integers(1, np.iinfo(np.uint64).max, size=(2, size * size), dtype=np.uint64, endpoint=True)


@numba.njit(cache=True)
def board_hash(board, zobrist):
    h = np.uint64(0)
    for p in range(board.shape[0]):
        if board[p] == 1:
            h ^= zobrist[0, p]
        elif board[p] == -1:
            h ^= zobrist[1, p]
    return h


def rng_state(seed: int) -> np.ndarray:
    """uint64 [1] state for `rand_below`, from any int seed (splitmix64, never zero)."""
    z = (int(seed) * 0x9E3779B97F4A7C15 + 0x9E3779B97F4A7C15) % 2**64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    return np.array([(z ^ (z >> 31)) or 1], np.uint64)


@numba.njit(cache=True)
def rand_below(state, n):
    """xorshift64*: a uniform int in [0, n), advancing state[0]; keeps playouts off numba's global RNG."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return np.int64((x * np.uint64(2685821657736338717)) >> np.uint64(33)) % n


# --- groups and moves ---------------------------------------------------------
@numba.njit(cache=True)
def _fill(board, nbrs, start, buf, base, mark, g, stop_libs):
    """Breadth-first fill of the group at `start` into buf[base:].

    Marks its stones and liberties with generation g. Stops early once
    `stop_libs` distinct liberties are found. Returns (end, liberties):
    the group's stones are buf[base:end] when the fill ran to completion.
    """
    colour = board[start]
    buf[base] = start
    mark[start] = g
    end = base + 1
    i = base
    libs = 0
    while i < end:
        p = buf[i]
        i += 1
        for k in range(4):
            q = nbrs[p, k]
            if q < 0:
                break
            if mark[q] == g:
                continue
            v = board[q]
            if v == 0:
                mark[q] = g
                libs += 1
                if libs >= stop_libs:
                    return end, libs
            elif v == colour:
                mark[q] = g
                buf[end] = q
                end += 1
    return end, libs


@numba.njit(cache=True)
def _seen(hist, n, h):
    for t in range(n):
        if hist[t] == h:
            return True
    return False


@numba.njit(cache=True)
def try_play(board, p, colour, h, zobrist, nbrs, hist, n_hist, apply, buf, mark, gen):
    """Check (and if `apply`, play) a stone of `colour` on point p.

    Superko is checked against hist[:n_hist] (pass n_hist=0 to skip it).
    Returns (status, hash after the move); the board is changed only when
    status is LEGAL and apply is True.
    """
    if board[p] != 0:
        return OCCUPIED, h
    g0 = gen[0] + 1
    ci = 0 if colour == 1 else 1
    new_h = h ^ zobrist[ci, p]
    ncap = 0
    safe = False
    for k in range(4):
        q = nbrs[p, k]
        if q < 0:
            break
        v = board[q]
        if v == 0:
            safe = True
            continue
        if mark[q] >= g0:  # a group already looked at for this move
            continue
        if v == colour and safe:
            continue
        gen[0] += 1
        end, libs = _fill(board, nbrs, q, buf, ncap, mark, gen[0], 2)
        if v == colour:
            if libs >= 2:
                safe = True
        elif libs == 1:  # its last liberty is p: captured
            for j in range(ncap, end):
                new_h ^= zobrist[1 - ci, buf[j]]
            ncap = end
    if ncap > 0:
        safe = True
    if not safe:
        return SUICIDE, h
    if n_hist > 0 and _seen(hist, n_hist, new_h):
        return SUPERKO, h
    if apply:
        board[p] = colour
        for j in range(ncap):
            board[buf[j]] = 0
    return LEGAL, new_h


@numba.njit(cache=True)
def empty_region(board, nbrs, p, buf, mark, g):
    """Flood the empty region holding point p (marking it g): its size, its points in buf[:size], and
    which colours it reaches (bit 1: black, bit 2: white)."""
    buf[0] = p
    mark[p] = g
    end = 1
    i = 0
    reach = 0
    while i < end:
        q = buf[i]
        i += 1
        for k in range(4):
            r = nbrs[q, k]
            if r < 0:
                break
            w = board[r]
            if w == 0:
                if mark[r] != g:
                    mark[r] = g
                    buf[end] = r
                    end += 1
            elif w == 1:
                reach |= 1
            else:
                reach |= 2
    return end, reach


@numba.njit(cache=True)
def score(board, nbrs, komi, buf, mark, gen):
    """Tromp-Taylor area score: black stones and black-only regions, minus white's, minus komi."""
    gen[0] += 1
    g = gen[0]
    total = 0
    for p in range(board.shape[0]):
        v = board[p]
        if v != 0:
            total += v
            continue
        if mark[p] == g:
            continue
        end, reach = empty_region(board, nbrs, p, buf, mark, g)
        if reach == 1:
            total += end
        elif reach == 2:
            total -= end
    return total - komi


@numba.njit(cache=True)
def _is_eye(board, p, colour, nbrs, diags):
    """A single-point eye of `colour`: all neighbours own, and few enough enemy diagonals."""
    n = 0
    for k in range(4):
        q = nbrs[p, k]
        if q < 0:
            break
        if board[q] != colour:
            return False
        n += 1
    bad = 0
    for k in range(4):
        q = diags[p, k]
        if q < 0:
            break
        if board[q] == -colour:
            bad += 1
    return bad == 0 if n < 4 else bad < 2


@numba.njit(cache=True)
def random_move(board, colour, h, zobrist, nbrs, diags, hist, n_hist, avoid_eyes, rng, cand, buf, mark, gen):
    """Play a uniformly random legal point move on `board` in place; pass if there is none.

    Returns (point or -1 for pass, hash after the move).
    """
    nn = board.shape[0]
    n = 0
    for p in range(nn):
        if board[p] == 0:
            cand[n] = p
            n += 1
    while n > 0:
        j = rand_below(rng, n)
        p = cand[j]
        n -= 1
        cand[j] = cand[n]
        if avoid_eyes and _is_eye(board, p, colour, nbrs, diags):
            continue
        status, new_h = try_play(board, p, colour, h, zobrist, nbrs, hist, n_hist, True, buf, mark, gen)
        if status == LEGAL:
            return p, new_h
    return -1, h


# --- slots ----------------------------------------------------------------------
@numba.njit(cache=True)
def play_slot(history, hashes, length, passes, to_play, s, a, zobrist, nbrs):
    """Play action a in slot s (a == N*N is pass). Returns LEGAL or the reason it is not."""
    nn = history.shape[2]
    t = length[s]
    c = to_play[s]
    h = hashes[s, t]
    if a == nn:
        history[s, t + 1] = history[s, t]
        passes[s] += 1
    else:
        buf = np.empty(nn, np.int32)
        mark = np.zeros(nn, np.int64)
        gen = np.zeros(1, np.int64)
        # check first, so that an illegal move writes nothing at all
        status, h = try_play(history[s, t], a, c, h, zobrist, nbrs, hashes[s], t + 1, False, buf, mark, gen)
        if status != LEGAL:
            return status
        history[s, t + 1] = history[s, t]
        try_play(history[s, t + 1], a, c, hashes[s, t], zobrist, nbrs, hashes[s], 0, True, buf, mark, gen)
        passes[s] = 0
    hashes[s, t + 1] = h
    length[s] = t + 1
    to_play[s] = -c
    return LEGAL


@numba.njit(cache=True)
def slot_score(history, length, s, nbrs, komi):
    nn = history.shape[2]
    return score(history[s, length[s]], nbrs, komi, np.empty(nn, np.int32), np.zeros(nn, np.int64),
                 np.zeros(1, np.int64))


@numba.njit(cache=True)
def random_games(history, hashes, length, passes, to_play, moves, max_moves, rng, zobrist, nbrs, diags):
    """Play `moves` uniformly random legal moves round-robin over all slots, restarting finished games.

    Passes only when no point move is legal. Returns the number of moves played.
    """
    B = history.shape[0]
    nn = history.shape[2]
    cand = np.empty(nn, np.int32)
    buf = np.empty(nn, np.int32)
    mark = np.zeros(nn, np.int64)
    gen = np.zeros(1, np.int64)
    played = 0
    while played < moves:
        for s in range(B):
            t = length[s]
            if passes[s] >= 2 or t >= max_moves:
                history[s, 0] = 0
                hashes[s, 0] = 0
                length[s] = 0
                passes[s] = 0
                to_play[s] = 1
                t = 0
            c = to_play[s]
            board = history[s, t + 1]
            board[:] = history[s, t]
            p, h = random_move(board, c, hashes[s, t], zobrist, nbrs, diags, hashes[s], t + 1, False,
                               rng, cand, buf, mark, gen)
            passes[s] = passes[s] + 1 if p < 0 else 0
            hashes[s, t + 1] = h
            length[s] = t + 1
            to_play[s] = -c
            played += 1
    return played


# --- leaves -------------------------------------------------------------------------
@numba.njit(cache=True)
def _replay(history, hashes, length, passes, to_play, s, path, depth, boards, hist, zobrist, nbrs, buf, mark, gen):
    """Replay path[:depth] from slot s into boards[0..depth] and hist[0..t0+depth].

    Returns (side to move, consecutive passes) at the leaf.
    """
    nn = history.shape[2]
    t0 = length[s]
    c = to_play[s]
    ps = passes[s]
    boards[0] = history[s, t0]
    hist[: t0 + 1] = hashes[s, : t0 + 1]
    h = hashes[s, t0]
    for d in range(depth):
        a = path[d]
        boards[d + 1] = boards[d]
        if a == nn:
            ps += 1
        else:
            _, h = try_play(boards[d + 1], a, c, h, zobrist, nbrs, hist, 0, True, buf, mark, gen)
            ps = 0
        hist[t0 + d + 1] = h
        c = -c
    return c, ps


@numba.njit(cache=True)
def label_groups(board, nbrs, zobrist, buf, mark, gen, gid, glibs, ghash):
    """Every stone's group, one fill a group: gid[p] its index (-1 on an empty point), glibs[g] its
    liberties and ghash[g] the Zobrist hash of its stones (what capturing it xors out)."""
    nn = board.shape[0]
    for p in range(nn):
        gid[p] = -1
    n = 0
    for p in range(nn):
        v = board[p]
        if v == 0 or gid[p] >= 0:
            continue
        gen[0] += 1
        end, libs = _fill(board, nbrs, p, buf, 0, mark, gen[0], nn + 1)
        ci = 0 if v == 1 else 1
        h = np.uint64(0)
        for j in range(end):
            gid[buf[j]] = n
            h ^= zobrist[ci, buf[j]]
        glibs[n] = libs
        ghash[n] = h
        n += 1


@numba.njit(cache=True)
def liberty_planes(board, c, gid, glibs, out):
    """out[LIBERTY_PLANES, N*N] (zeroed by caller): 1 on each stone whose group has 1, 2, >= 3 liberties,
    the side to move `c`'s groups in out[0:3] and the opponent's in out[3:6] (groups from label_groups)."""
    for p in range(board.shape[0]):
        v = board[p]
        if v != 0:
            out[(0 if v == c else 3) + min(glibs[gid[p]], 3) - 1, p] = 1


@numba.njit(cache=True)
def leaf_inputs(history, hashes, length, passes, to_play, slots, paths, depth, want_planes, max_moves, komi,
                zobrist, nbrs, diags, avoid_eyes, late_pass, legal, terminal, planes):
    """Describe every leaf: legal[L, A], terminal[L] (NaN unless over), planes[L, 17 or 23, N*N] of 0/1 (uint8 or
    float32, zeroed by caller; 23 adds the liberty planes).

    avoid_eyes: the side to move's own single-point eyes (_is_eye) are left out of legal[L, A].
    late_pass: the pass is in legal[L, A] only as a reply to a pass or when no other action is.
    """
    L = slots.shape[0]
    nn = history.shape[2]
    D = paths.shape[1]
    boards = np.empty((D + 1, nn), np.int8)
    hist = np.empty(max_moves + D + 2, np.uint64)
    buf = np.empty(nn, np.int32)
    mark = np.zeros(nn, np.int64)
    gen = np.zeros(1, np.int64)
    gid = np.empty(nn, np.int32)
    glibs = np.empty(nn, np.int32)
    ghash = np.empty(nn, np.uint64)
    caught = np.empty(4, np.int32)
    size = 1
    while size < 2 * hist.shape[0]:
        size *= 2
    keys = np.empty(size, np.uint64)
    used = np.zeros(size, np.int64)  # used[i] == l + 1: keys[i] holds a hash of leaf l's game
    hmask = np.uint64(size - 1)
    for l in range(L):
        s = slots[l]
        dl = depth[l]
        t0 = length[s]
        c, ps = _replay(history, hashes, length, passes, to_play, s, paths[l], dl, boards, hist, zobrist, nbrs,
                        buf, mark, gen)
        T = t0 + dl
        board = boards[dl]
        legal[l, :] = False
        labelled = False
        if ps >= 2 or T >= max_moves:
            sc = score(board, nbrs, komi, buf, mark, gen)
            terminal[l] = c * (1.0 if sc > 0 else (-1.0 if sc < 0 else 0.0))
        else:
            terminal[l] = np.nan
            # every position of the game so far, in an open-addressing set
            for t in range(T + 1):
                i = np.int64(hist[t] & hmask)
                while used[i] == l + 1 and keys[i] != hist[t]:
                    i = (i + 1) & (size - 1)
                used[i] = l + 1
                keys[i] = hist[t]
            label_groups(board, nbrs, zobrist, buf, mark, gen, gid, glibs, ghash)
            labelled = True
            h = hist[T]
            for p in range(nn):
                if board[p] != 0 or (avoid_eyes and _is_eye(board, p, c, nbrs, diags)):
                    continue
                # try_play's rules from the labelled groups, with no fill: the stone is safe next to an empty
                # point, next to an own group with another liberty, or when it captures a group in atari
                h2 = h ^ zobrist[0 if c == 1 else 1, p]  # the board's hash after the move
                safe = False
                nc = 0
                for k in range(4):
                    q = nbrs[p, k]
                    if q < 0:
                        break
                    v = board[q]
                    if v == 0:
                        safe = True
                    elif v == c:
                        if glibs[gid[q]] >= 2:
                            safe = True
                    elif glibs[gid[q]] == 1:  # its last liberty is p: captured
                        g = gid[q]
                        dup = False
                        for j in range(nc):
                            if caught[j] == g:
                                dup = True
                        if not dup:
                            caught[nc] = g
                            nc += 1
                            h2 ^= ghash[g]
                        safe = True
                if not safe:  # suicide
                    continue
                i = np.int64(h2 & hmask)
                repeat = False
                while used[i] == l + 1:
                    if keys[i] == h2:
                        repeat = True
                        break
                    i = (i + 1) & (size - 1)
                legal[l, p] = not repeat
            legal[l, nn] = True
            if late_pass and ps == 0:
                for p in range(nn):
                    if legal[l, p]:
                        legal[l, nn] = False
                        break
        if want_planes:
            leaf = planes[l]
            for k in range(HISTORY_PLANES):
                t = T - k
                if t < 0:
                    break
                b = boards[t - t0] if t > t0 else history[s, t]
                own = leaf[k]
                opp = leaf[HISTORY_PLANES + k]
                for p in range(nn):  # written whole, without a branch: the loop vectorises
                    v = b[p] * c
                    own[p] = v > 0
                    opp[p] = v < 0
            if c == 1:
                planes[l, 2 * HISTORY_PLANES, :] = 1
            if planes.shape[1] > 2 * HISTORY_PLANES + 1:
                if not labelled:
                    label_groups(board, nbrs, zobrist, buf, mark, gen, gid, glibs, ghash)
                liberty_planes(board, c, gid, glibs, planes[l, 2 * HISTORY_PLANES + 1:])



@numba.njit(cache=True, parallel=True)
def leaf_inputs_chunks(history, hashes, length, passes, to_play, slots, paths, depth, want_planes, max_moves, komi,
                       zobrist, nbrs, diags, avoid_eyes, late_pass, legal, terminal, planes, chunks):
    """leaf_inputs over `chunks` slices of the leaves on numba's threads (each slice its own scratch)."""
    L = slots.shape[0]
    for k in numba.prange(chunks):
        lo, hi = k * L // chunks, (k + 1) * L // chunks
        leaf_inputs(history, hashes, length, passes, to_play, slots[lo:hi], paths[lo:hi], depth[lo:hi], want_planes,
                    max_moves, komi, zobrist, nbrs, diags, avoid_eyes, late_pass, legal[lo:hi], terminal[lo:hi],
                    planes[lo:hi])


@numba.njit(cache=True)
def rollouts(history, hashes, length, passes, to_play, slots, paths, depth, rng, max_moves, komi,
             zobrist, nbrs, diags, out):
    """Random playout (no filling of own eyes) from each leaf to the end; out[l] = result, leaf mover's view."""
    L = slots.shape[0]
    nn = history.shape[2]
    D = paths.shape[1]
    boards = np.empty((D + 1, nn), np.int8)
    hist = np.empty(max_moves + D + 2, np.uint64)
    cand = np.empty(nn, np.int32)
    buf = np.empty(nn, np.int32)
    mark = np.zeros(nn, np.int64)
    gen = np.zeros(1, np.int64)
    for l in range(L):
        s = slots[l]
        dl = depth[l]
        c, ps = _replay(history, hashes, length, passes, to_play, s, paths[l], dl, boards, hist, zobrist, nbrs,
                        buf, mark, gen)
        leaf_colour = c
        T = length[s] + dl
        board = boards[dl].copy()
        h = hist[T]
        while ps < 2 and T < max_moves:
            p, h = random_move(board, c, h, zobrist, nbrs, diags, hist, T + 1, True, rng, cand, buf, mark, gen)
            ps = ps + 1 if p < 0 else 0
            T += 1
            hist[T] = h
            c = -c
        sc = score(board, nbrs, komi, buf, mark, gen)
        out[l] = leaf_colour * (1.0 if sc > 0 else (-1.0 if sc < 0 else 0.0))
