"""A conformance adapter written from the papers' equations in plain NumPy, without refimpl: the
example of docs/conformance.md, and the independent side of every vector (``tools.conformance``
runs it: a vector whose expected values refimpl computed wrongly fails here). It imports nothing
from refimpl (tests/test_layout.py). Run the kit against it with

    REFIMPL_IMPL=refimpl.conformance.numpy_adapter python -m pytest --pyargs refimpl.conformance

Each function takes the vector's inputs in the documented order and returns its outputs as a tuple.
"""
import numpy as np


def _with_bias(M, bias):
    return np.hstack([np.ones((M.shape[0], 1)), M]) if bias else M


def loss_grad(W1, W2, X, y, activation, bias):
    """Mean softmax cross-entropy of logits = act(X̃ W1ᵀ)~ W2ᵀ (X̃: a column of ones first when bias)."""
    n = X.shape[0]
    Xb = _with_bias(X, bias)
    Z = Xb @ W1.T
    if activation == "swish":
        S = 1.0 / (1.0 + np.exp(-Z))
        A, dA = Z * S, S * (1.0 + Z * (1.0 - S))
    else:
        A, dA = np.maximum(Z, 0.0), (Z > 0).astype(float)
    Ab = _with_bias(A, bias)
    O = Ab @ W2.T
    O = O - O.max(axis=1, keepdims=True)
    logZ = np.log(np.exp(O).sum(axis=1))
    loss = float(np.mean(logZ - O[np.arange(n), y]))
    P = np.exp(O - logZ[:, None])
    P[np.arange(n), y] -= 1.0
    P /= n
    gW2 = P.T @ Ab
    dH = P @ W2[:, 1:] if bias else P @ W2
    gW1 = (dH * dA).T @ Xb
    return loss, gW1, gW2


def exp_nonpos(x):
    return (np.exp(x),)


def surrogate_update(A, B, C, loss_hat, grad_hat, omega, rho, tau, curvature):
    A_new = tau if curvature == "fixed" else (1 - rho) * A + rho * tau
    B_new = (1 - rho) * B + rho * (grad_hat - 2 * tau * omega)
    C_new = (1 - rho) * C + rho * (loss_hat - grad_hat @ omega + tau * omega @ omega)
    return A_new, B_new, C_new


def unconstrained_step(A, B, lam):
    return (-B / (2 * (A + lam)),)


def move(omega, omega_bar, gamma):
    return ((1 - gamma) * omega + gamma * omega_bar,)


def closed_form_step(A, B, C, U, c):
    """Lemma 1 from the dual g(ν) = −ν² b/(4(1 + νA)) + ν(C − U), b = ||B||²; at an active
    constraint ν is raised by ulps until the float64 point is feasible."""
    def q(w):
        return A * (w @ w) + B @ w + C

    def point(nu):
        return B * (-nu / (2 * (1 + nu * A)))
    if C <= U:
        return np.zeros_like(B), 0.0, 0.0
    b, d = B @ B, 4 * A * (C - U)
    nu0 = d / (A * (b - d) * (np.sqrt(b / (b - d)) + 1)) if b > d else np.inf
    nu = min(nu0, c)
    w = point(nu)
    if nu0 <= c:
        step = max(nu, np.finfo(float).tiny) * np.finfo(float).eps
        while q(w) > U and nu < c:
            nu = min(nu + step, c)
            w = point(nu)
            step *= 2
    return w, max(0.0, q(w) - U), nu


def local_weights(optimizer, param, tau, eta):
    t = np.arange(int(tau))
    if optimizer == "sgd":
        return (np.ones(int(tau)),)
    if optimizer == "momentum":
        return ((1 - param ** (tau - t)) / (1 - param),)
    if optimizer == "proximal":
        return ((1 - eta * param) ** (tau - 1 - t),)
    return (1 / (1 + param * t),)


def local_update(optimizer, param, g, theta, theta0, state, eta, t):
    if optimizer == "momentum":
        u = param * state + g
        return theta - eta * u, u
    if optimizer == "proximal":
        return theta - eta * (g + param * (theta - theta0)), np.zeros_like(theta)
    if optimizer == "time-varying-lr":
        return theta - eta / (1 + param * t) * g, np.zeros_like(theta)
    return theta - eta * g, np.zeros_like(theta)


def condition14(eta, tau, w_bar, L, L_k):
    return ((eta <= 1 / (16 * np.maximum(L, L_k) * tau * w_bar)).astype(float),)


def storm_update(A, b, c, x_new, x_old, h, u, v, zeta, xi, alpha, beta, varrho, C_g, C_f):
    def phi(z):
        return z / np.sqrt(1 + z * z)

    def proj(m, r):
        n = np.linalg.norm(m)
        return m if n <= r else m * (r / n)
    h_new = (A @ x_new + b + zeta) + (1 - alpha) * (h - (A @ x_old + b + zeta))
    u_new = proj(A + (1 - beta) * (u - A), C_g)
    v_new = proj(phi(h_new - c) + xi + (1 - varrho) * (v - (phi(h - c) + xi)), C_f)
    return h_new, u_new, v_new


def storm_weights(k, n, c1, c2, c3, t):
    eta = k / (n + t) ** (1 / 3)
    return eta, min(1.0, c1 * eta ** 2), min(1.0, c2 * eta ** 2), min(1.0, c3 * eta ** 2)


def adaptive_matrix(kind, a, a_max, w_bar, rho, theta):
    if kind == "norm":
        s = theta * a[0] + (1 - theta) * np.linalg.norm(w_bar)
        return np.full_like(a, s), a_max, np.full_like(a, s + rho)
    a_new = theta * a + (1 - theta) * w_bar ** 2
    if kind == "adam":
        return a_new, a_max, np.sqrt(a_new) + rho
    m = np.maximum(a_max, a_new)
    return a_new, m, np.sqrt(m) + rho


def _softmax_xent_grads(W0, H, y):
    """Mean cross-entropy of H W0[:, 1:]ᵀ + W0[:, 0]: (∂/∂W0, ∂/∂H)."""
    O = H @ W0[:, 1:].T + W0[:, 0]
    P = np.exp(O - O.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(y)), y] -= 1.0
    P /= len(y)
    return np.hstack([P.sum(axis=0)[:, None], P.T @ H]), P @ W0[:, 1:]


def _step(optimizer, param, g, theta, theta0, state, eta, t):
    return local_update(optimizer, param, g, theta, theta0, state, eta, t)


def vfl_round(W0, W1, W2, X1, X2, y, tau, eta, optimizer, param, labels, s0, s1, s2):
    """One round: the server's τ_0 steps with H fixed, each party's τ_k steps with the server head
    and the other embedding at their round-start values."""
    y = np.asarray(y, dtype=int)
    Ws, Xs, S = [W0, W1, W2], [None, X1, X2], [s0, s1, s2]
    hs = [X @ W[:, 1:].T + W[:, 0] for X, W in zip(Xs[1:], Ws[1:])]
    H = np.hstack(hs)
    cols = [None, slice(0, hs[0].shape[1]), slice(hs[0].shape[1], H.shape[1])]
    sent = _softmax_xent_grads(W0, H, y)[1]
    out_W, out_S = [], []
    for k in range(3):
        th, st = Ws[k].copy(), (S[k] if optimizer == "momentum" else np.zeros_like(Ws[k]))
        for t in range(int(tau[k])):
            if k == 0:
                g = _softmax_xent_grads(th, H, y)[0]
            else:
                Hk = H.copy()
                Hk[:, cols[k]] = Xs[k] @ th[:, 1:].T + th[:, 0]
                dh = (sent if labels == "server" else _softmax_xent_grads(W0, Hk, y)[1])[:, cols[k]]
                g = np.hstack([dh.sum(axis=0)[:, None], dh.T @ Xs[k]])
            th, st = _step(optimizer, param, g, th, Ws[k], st, eta[k], t)
        out_W.append(th)
        out_S.append(st if optimizer == "momentum" else np.zeros_like(th))
    return (*out_W, *out_S)


def vfl_taus(rule, timeout, Q, server_steps, step_times):
    tau = np.maximum(1, np.floor(timeout / step_times)).astype(int) if rule == "timeout" \
        else np.full(len(step_times), int(Q))
    if server_steps > 0:
        tau[0] = server_steps
    return (tau,)


def vfl_adaptive_eta(rule, A, eta, prev, tau, w_bar):
    if rule == "paper":
        return A / (tau * w_bar), prev
    return eta * prev / tau, np.asarray(tau, dtype=float)


# ----------------------------------------------------------------------------- the machinery

def full_cost(W1, W2, X, y, activation, bias, lam):
    """Whole-data loss, the authors' one-vs-all cost and ∇(loss + λ||ω||²), in one pass."""
    loss, g1, g2 = loss_grad(W1, W2, X, y, activation, bias)
    Xb = _with_bias(X, bias)
    Z = Xb @ W1.T
    A = Z / (1.0 + np.exp(-Z)) if activation == "swish" else np.maximum(Z, 0.0)
    O = _with_bias(A, bias) @ W2.T
    O = O - O.max(axis=1, keepdims=True)
    logp = O - np.log(np.exp(O).sum(axis=1, keepdims=True))
    onehot = np.zeros_like(O)
    onehot[np.arange(len(y)), y] = 1.0
    ova = float(np.mean(np.sum(-onehot * logp - (1 - onehot) * np.log1p(-np.exp(logp)), axis=1)))
    return loss, ova, g1 + 2 * lam * W1, g2 + 2 * lam * W2


class _Draws:
    def __init__(self, perms, shares, normals):
        self.perms, self.shares, self.normals = list(perms), list(shares), list(normals)
        self.used = 0

    def permutation(self, n):
        out, self.perms = self.perms[:n], self.perms[n:]
        self.used += 1
        return np.asarray(out, dtype=int)

    def dirichlet(self, K):
        out, self.shares = self.shares[:K], self.shares[K:]
        return np.asarray(out)


def partition(kind, n_clients, labels, permutations, dirichlet, normals):
    labels = np.asarray(labels, dtype=int)
    N, K = labels.size, int(n_clients)
    draws = _Draws(permutations, dirichlet, normals)
    owner = np.empty(N, dtype=int)
    name, *par = kind.split(":")
    if name in ("iid", "quantity"):
        if name == "iid":
            sizes = [N // K + (k < N % K) for k in range(K)]
        else:
            w = np.exp(float(par[0]) * np.asarray(normals, dtype=float))
            sizes = 1 + np.floor(w / w.sum() * (N - K)).astype(int)
            sizes[np.argmax(sizes)] += N - sizes.sum()
        order = draws.permutation(N)
        start = 0
        for k, size in enumerate(sizes):
            owner[order[start:start + size]] = k
            start += size
    elif name == "label_skew":
        ids = np.argsort(labels, kind="stable")
        shards = np.array_split(ids, 2 * K)
        order = draws.permutation(2 * K)
        for k in range(K):
            owner[shards[order[2 * k]]] = k
            owner[shards[order[2 * k + 1]]] = k
    else:                                    # dirichlet:alpha[:min_size]
        min_size = int(par[1]) if len(par) > 1 else 0
        while True:
            for c in np.unique(labels):
                ids = np.flatnonzero(labels == c)[draws.permutation(int(np.sum(labels == c)))]
                cuts = np.floor(np.cumsum(draws.dirichlet(K))[:-1] * ids.size).astype(int)
                bounds = [0, *cuts, ids.size]
                for k in range(K):
                    owner[ids[bounds[k]:bounds[k + 1]]] = k
            if np.bincount(owner, minlength=K).min() >= max(min_size, 1):
                break
    return owner, draws.used


def tune_select(finished, accuracy, cost):
    ok = [i for i in range(len(accuracy)) if finished[i] and not np.isnan(accuracy[i])]
    if not ok:
        return (-1,)
    return (min(ok, key=lambda i: (-accuracy[i], cost[i], i)),)


def vfl_round_time(step_times, tau, timeout, server_free, floats_up, floats_down, bandwidth, latency, server_time):
    work = (tau * step_times)[1:] if server_free else tau * step_times
    compute = max(float(np.max(work)), timeout) if timeout > 0 else float(np.max(work))
    messages = 2 * latency + 8 * (floats_up + floats_down) / bandwidth
    over = (step_times > timeout).astype(float) if timeout > 0 else np.zeros(len(step_times))
    return compute + messages + server_time, over


def vfl_async_events(speeds, msg, server_time, server_free, n_events):
    """The event loop, written as a sort of the next arrivals (a heap in a real implementation)."""
    K = speeds.shape[1] - 1
    arrivals = {k: speeds[0, k] + msg[k] for k in range(1, K + 1)}
    cycle = {k: 1 for k in range(1, K + 1)}
    free_at, times, parties = 0.0, [], []
    for _ in range(int(n_events)):
        k = min(arrivals, key=lambda j: (arrivals[j], j))
        now = max(arrivals[k], free_at)
        row = speeds[cycle[k] % len(speeds)]
        cycle[k] += 1
        free_at = now + (0.0 if server_free else row[0])
        arrivals[k] = free_at + server_time + msg[k] + row[k] + msg[k]
        times.append(now)
        parties.append(k)
    return np.array(times), np.array(parties)


def scgd_run(A, b, c, x1, zeta0, zeta, zeta2, xi, T, q, eta, beta, alpha):
    M = b.shape[0]
    X = np.tile(x1, (M, 1))
    Y = X @ A.T + b + zeta0
    Mo = np.zeros_like(X)
    traj = []
    for t in range(1, int(T) + 1):
        traj.append(X.mean(axis=0))
        Y = (1 - beta) * Y + beta * (X @ A.T + b + zeta[t - 1])
        D = (((Y - c) / np.sqrt(1 + (Y - c) ** 2)) + xi[t - 1]) @ A
        if alpha > 0:
            Mo = (1 - alpha) * Mo + alpha * D
            X = X - eta * Mo
        else:
            X = X - eta * D
        if t % q == 0:
            X = np.tile(X.mean(axis=0), (M, 1))
            if alpha > 0:
                Y, Mo = np.tile(Y.mean(axis=0), (M, 1)), np.tile(Mo.mean(axis=0), (M, 1))
    t = np.arange(1, int(T) + 1)
    return np.array(traj), M + 3 * M * t, t // int(q)


def theorem_rhs(C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap, k, n, c1, c2, c3, gamma, q, rho, T, A_rms):
    L_fg, C_fg = np.sqrt(L_f ** 2 * C_g ** 2 + L_g ** 2), max(C_f, C_g)
    s2 = sigma ** 2

    def G(r):
        dhat2 = (2 * c1 ** 2 * L_f ** 2 * s2 + c3 ** 2 * s2 + 4 * c3 ** 2 * delta_f ** 2
                 + 4 * c3 ** 2 * L_f ** 2 * delta_g ** 2 + c2 ** 2 * s2 + 3 * c2 ** 2 * delta_g ** 2)
        return (4 * F_gap / (k * r * gamma) + 12 * n ** (1 / 3) * s2 / (q * k ** 2 * r ** 2)
                + 4 * k ** 2 * (dhat2 / (4 * gamma ** 2 * L_fg ** 2)
                                + (c1 ** 2 + c2 ** 2 + c3 ** 2) * s2 / (3 * r * gamma * q * L_fg * C_fg))
                * np.log(n + T))

    def rhs(g):
        return np.sqrt(2 * g) * n ** (1 / 6) / np.sqrt(T) + np.sqrt(2 * g) / T ** (1 / 3)
    return G(rho), rhs(G(rho)) * A_rms, rhs(G(1.0)), np.sqrt(2 * C_f ** 2 * L_g ** 2 + 2 * C_g ** 4 * L_f ** 2)


def client_aggregate(sizes, batch, loss_sums, grad_sums, arrival, batches):
    """The server's assembly of the clients' replies: each reply keyed by its partition id."""
    import json
    replies = {int(k): (loss_sums[k], grad_sums[k], batch[k]) for k in arrival}      # in arrival order
    w = np.asarray(sizes, dtype=float) / np.sum(sizes)
    loss = sum(w[k] / replies[k][2] * replies[k][0] for k in range(len(sizes)))
    grad = sum(w[k] / replies[k][2] * replies[k][1] for k in range(len(sizes)))
    config = json.dumps({str(k): [int(i) for i in b] for k, b in enumerate(batches)})
    routed = np.array([json.loads(config)[str(k)] for k in range(len(sizes))])
    return loss, grad, routed


def divergence_stop(costs, sq_norms, cost_factor, max_sq_norm):
    for i, (c, q) in enumerate(zip(costs, sq_norms)):
        if not np.isfinite(c) or abs(c) > cost_factor * max(abs(costs[0]), 1e-300):
            return (i,)
        if not np.isfinite(q) or q > max_sq_norm:
            return (i,)
    return (-1,)


def constrained_run(W1, W2, X, y, batches, tau, rho_a, rho_alpha, gamma_a, gamma_alpha, U, c, curvature):
    """Algorithm 2 with one client, from the pieces above: surrogate (7)–(9), Lemma 1, move (5)."""
    shapes = (W1.shape, W2.shape)
    w = np.concatenate([W1.ravel(), W2.ravel()])
    A, B, C = 0.0, np.zeros_like(w), 0.0
    rec = []
    for t, batch in enumerate(batches, start=1):
        W1t, W2t = w[:W1.size].reshape(shapes[0]), w[W1.size:].reshape(shapes[1])
        loss, g1, g2 = loss_grad(W1t, W2t, X[batch], y[batch], "swish", False)
        g = np.concatenate([g1.ravel(), g2.ravel()])
        rho, gamma = rho_a / t ** rho_alpha, gamma_a / t ** gamma_alpha
        A, B, C = surrogate_update(A, B, C, loss, g, w, rho, tau, curvature)
        w_bar, slack, nu = closed_form_step(A, B, C, U, c)
        (w,) = move(w, w_bar, gamma)
        rec.append((A, nu, slack, loss))
    A_t, nu_t, s_t, l_t = (np.array(v) for v in zip(*rec))
    return w[:W1.size].reshape(shapes[0]), w[W1.size:].reshape(shapes[1]), A_t, nu_t, s_t, l_t


def mfcgd_run(A, b, c, x1, zeta0, xi0, zeta, xi, T, q, k, n, c1, c2, c3, gamma, C_g, C_f, matrix, rho, theta):
    """Algorithm 1 with M clients, from storm_update, storm_weights and adaptive_matrix above."""
    M, d = b.shape[0], x1.size

    def phi(z):
        return z / np.sqrt(1 + z * z)
    X = np.tile(x1, (M, 1))
    H = np.array([np.mean([A @ x1 + b[m] + zeta0[m, j] for j in range(q)], axis=0) for m in range(M)])
    U = np.array([A.copy() for _ in range(M)])
    V = np.array([np.mean([phi(H[m] - c[m]) + xi0[m, j] for j in range(q)], axis=0) for m in range(M)])
    a, a_max = np.zeros(d), np.zeros(d)

    def matrix_of(w_bar):
        nonlocal a, a_max
        if matrix == "identity":
            return np.ones(d)
        a, a_max, diag = adaptive_matrix(matrix, a, a_max, w_bar, rho, theta)
        return diag
    W = np.einsum("mpd,mp->md", U, V)
    Adiag = matrix_of(W.mean(axis=0))
    traj = []
    for t in range(1, int(T) + 1):
        x_bar = X.mean(axis=0)
        traj.append(x_bar)
        eta, al, be, va = storm_weights(k, n, c1, c2, c3, t)
        if t % q == 0:
            Adiag = matrix_of(W.mean(axis=0))
            X_new = np.tile(x_bar - gamma * eta * W.mean(axis=0) / Adiag, (M, 1))
        else:
            X_new = X - gamma * eta * W / Adiag
        for m in range(M):
            H[m], U[m], V[m] = storm_update(A, b[m], c[m], X_new[m], X[m], H[m], U[m], V[m], zeta[t - 1, m],
                                            xi[t - 1, m], al, be, va, C_g, C_f)
        W = np.einsum("mpd,mp->md", U, V)
        X = X_new
    t = np.arange(1, int(T) + 1)
    return np.array(traj), 2 * q * M + 2 * M * t, t // int(q)
