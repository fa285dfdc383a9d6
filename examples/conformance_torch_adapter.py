"""A conformance adapter for a PyTorch implementation, written from the papers' equations without
refimpl: the second example of docs/conformance.md. The network's gradients come from torch's
autograd (not a hand derivation), every tensor is float64 on the CPU, and each function converts
the vector's NumPy inputs to tensors and its outputs back. Run the kit against it with

    REFIMPL_IMPL=conformance_torch_adapter PYTHONPATH=examples python -m pytest --pyargs refimpl.conformance

(needs ``pip install torch==2.13.0``, the project's ``torch`` extra).
"""
import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def _with_bias(M, bias):
    return torch.cat([torch.ones(M.shape[0], 1), M], dim=1) if bias else M


def loss_grad(W1, W2, X, y, activation, bias):
    """Mean softmax cross-entropy of act(X̃ W1ᵀ)~ W2ᵀ, gradients by autograd. torch's ReLU has
    derivative 0 at 0, as the vectors require."""
    W1, W2 = _t(W1).requires_grad_(), _t(W2).requires_grad_()
    Xb = _with_bias(_t(X), bias)
    Z = Xb @ W1.T
    H = torch.nn.functional.silu(Z) if activation == "swish" else torch.relu(Z)
    out = _with_bias(H, bias) @ W2.T
    loss = torch.nn.functional.cross_entropy(out, torch.as_tensor(np.asarray(y, dtype=np.int64)))
    g1, g2 = torch.autograd.grad(loss, (W1, W2))
    return float(loss.detach()), g1.numpy(), g2.numpy()


def exp_nonpos(x):
    return (torch.exp(_t(x)).numpy(),)


def surrogate_update(A, B, C, loss_hat, grad_hat, omega, rho, tau, curvature):
    B, g, w = _t(B), _t(grad_hat), _t(omega)
    A_new = tau if curvature == "fixed" else (1 - rho) * A + rho * tau
    B_new = (1 - rho) * B + rho * (g - 2 * tau * w)
    C_new = (1 - rho) * C + rho * (loss_hat - torch.dot(g, w) + tau * torch.dot(w, w))
    return float(A_new), B_new.numpy(), float(C_new)


def unconstrained_step(A, B, lam):
    return ((-_t(B) / (2 * (A + lam))).numpy(),)


def move(omega, omega_bar, gamma):
    return (((1 - gamma) * _t(omega) + gamma * _t(omega_bar)).numpy(),)


def closed_form_step(A, B, C, U, c):
    """Lemma 1 through the dual of the one-constraint QCQP; at an active constraint the multiplier
    is raised by ulps until the float64 point is feasible (the vectors ask for feasibility)."""
    B = _t(B)

    def q(w):
        return float(A * torch.dot(w, w) + torch.dot(B, w) + C)

    def point(nu):
        return B * (-nu / (2 * (1 + nu * A)))
    if C <= U:
        return np.zeros(B.shape[0]), 0.0, 0.0
    b, d = float(torch.dot(B, B)), 4 * A * (C - U)
    nu0 = d / (A * (b - d) * (np.sqrt(b / (b - d)) + 1)) if b > d else np.inf
    nu = min(nu0, c)
    w = point(nu)
    if nu0 <= c:
        step = max(nu, np.finfo(float).tiny) * np.finfo(float).eps
        while q(w) > U and nu < c:
            nu = min(nu + step, c)
            w = point(nu)
            step *= 2
    return w.numpy(), max(0.0, q(w) - U), nu


def local_weights(optimizer, param, tau, eta):
    """The weights of (8), read off by running the optimizer on unit "gradients": every optimizer
    here is affine in the gradients with θ^0 = 0 (the proximal pull too: δ ← (1 − ημ)δ − ηg), so
    with g^s = e_s (one coordinate per step) θ^τ − θ^0 = −η Σ_s w^s e_s and w = (θ^0 − θ^τ)/η."""
    tau = int(tau)
    theta0 = torch.zeros(tau)
    theta, state = theta0.clone(), torch.zeros(tau)
    for s in range(tau):
        g = torch.zeros(tau)
        g[s] = 1.0
        theta, state = _step(optimizer, param, g, theta, theta0, state, eta, s)
    return ((theta0 - theta) / eta).numpy(),


def _step(optimizer, param, g, theta, theta0, state, eta, t):
    if optimizer == "momentum":
        u = param * state + g
        return theta - eta * u, u
    if optimizer == "proximal":
        return theta - eta * (g + param * (theta - theta0)), torch.zeros_like(theta)
    if optimizer == "time-varying-lr":
        return theta - eta / (1 + param * t) * g, torch.zeros_like(theta)
    return theta - eta * g, torch.zeros_like(theta)


def local_update(optimizer, param, g, theta, theta0, state, eta, t):
    th, st = _step(optimizer, param, _t(g), _t(theta), _t(theta0), _t(state), eta, t)
    return th.numpy(), st.numpy()


def condition14(eta, tau, w_bar, L, L_k):
    eta, tau, w_bar, L_k = (_t(a) for a in (eta, tau, w_bar, L_k))
    return ((eta <= 1 / (16 * torch.clamp(L_k, min=L) * tau * w_bar)).to(torch.float64).numpy(),)


def storm_update(A, b, c, x_new, x_old, h, u, v, zeta, xi, alpha, beta, varrho, C_g, C_f):
    A, b, c, x_new, x_old, h, u, v, zeta, xi = (_t(a) for a in (A, b, c, x_new, x_old, h, u, v, zeta, xi))

    def phi(z):
        return z / torch.sqrt(1 + z * z)

    def proj(m, r):
        n = torch.linalg.norm(m)
        return m if n <= r else m * (r / n)
    h_new = (A @ x_new + b + zeta) + (1 - alpha) * (h - (A @ x_old + b + zeta))
    u_new = proj(A + (1 - beta) * (u - A), C_g)
    v_new = proj(phi(h_new - c) + xi + (1 - varrho) * (v - (phi(h - c) + xi)), C_f)
    return h_new.numpy(), u_new.numpy(), v_new.numpy()


def storm_weights(k, n, c1, c2, c3, t):
    eta = k / (n + t) ** (1 / 3)
    return eta, min(1.0, c1 * eta ** 2), min(1.0, c2 * eta ** 2), min(1.0, c3 * eta ** 2)


def adaptive_matrix(kind, a, a_max, w_bar, rho, theta):
    a, a_max, w_bar = _t(a), _t(a_max), _t(w_bar)
    if kind == "norm":
        s = theta * a[0] + (1 - theta) * torch.linalg.norm(w_bar)
        return torch.full_like(a, float(s)).numpy(), a_max.numpy(), torch.full_like(a, float(s + rho)).numpy()
    a_new = theta * a + (1 - theta) * w_bar ** 2
    if kind == "adam":
        return a_new.numpy(), a_max.numpy(), (torch.sqrt(a_new) + rho).numpy()
    m = torch.maximum(a_max, a_new)
    return a_new.numpy(), m.numpy(), (torch.sqrt(m) + rho).numpy()


def vfl_round(W0, W1, W2, X1, X2, y, tau, eta, optimizer, param, labels, s0, s1, s2):
    """One Flex-VFL round; every local gradient by autograd on the loss with the other blocks
    (and, for a party, the server head) detached at their round-start values."""
    y = torch.as_tensor(np.asarray(y, dtype=np.int64))
    W = [_t(a) for a in (W0, W1, W2)]
    X = [None, _t(X1), _t(X2)]
    S = [_t(a) for a in (s0, s1, s2)]

    def enc(Wk, Xk):
        return Xk @ Wk[:, 1:].T + Wk[:, 0]

    def loss(W0_, h1, h2):
        H = torch.cat([h1, h2], dim=1)
        return torch.nn.functional.cross_entropy(H @ W0_[:, 1:].T + W0_[:, 0], y)
    h = [None, enc(W[1], X[1]), enc(W[2], X[2])]
    hh = [None, h[1].clone().requires_grad_(), h[2].clone().requires_grad_()]
    sent = torch.autograd.grad(loss(W[0], hh[1], hh[2]), (hh[1], hh[2]))
    out_W, out_S = [], []
    for k in range(3):
        th = W[k].clone()
        st = S[k] if optimizer == "momentum" else torch.zeros_like(th)
        for t in range(int(tau[k])):
            p = th.clone().requires_grad_()
            if k == 0:
                g, = torch.autograd.grad(loss(p, h[1], h[2]), (p,))
            elif labels == "server":
                g, = torch.autograd.grad((enc(p, X[k]) * sent[k - 1]).sum(), (p,))
            else:
                hs = [h[1], h[2]]
                hs[k - 1] = enc(p, X[k])
                g, = torch.autograd.grad(loss(W[0], *hs), (p,))
            th, st = _step(optimizer, param, g, th, W[k], st, float(eta[k]), t)
        out_W.append(th.numpy())
        out_S.append(st.numpy() if optimizer == "momentum" else np.zeros(th.shape))
    return (*out_W, *out_S)


def vfl_taus(rule, timeout, Q, server_steps, step_times):
    s = _t(step_times)
    # tensor / tensor: `timeout / s` with a Python float on the left multiplies by the reciprocal,
    # not a correctly rounded division (0.3 / 0.1 gives 3.0000000000000004, not 2.9999999999999996:
    # one step more; vfl_taus-3 fails it)
    tau = (torch.clamp(torch.floor(torch.full_like(s, timeout) / s), min=1) if rule == "timeout"
           else torch.full_like(s, float(Q))).to(torch.int64)
    if server_steps > 0:
        tau[0] = int(server_steps)
    return (tau.numpy(),)


def vfl_adaptive_eta(rule, A, eta, prev, tau, w_bar):
    A, eta, prev, tau, w_bar = (_t(a) for a in (A, eta, prev, tau, w_bar))
    if rule == "paper":
        return (A / (tau * w_bar)).numpy(), prev.numpy()
    return (eta * prev / tau).numpy(), tau.numpy()


# ----------------------------------------------------------------------------- the machinery

def full_cost(W1, W2, X, y, activation, bias, lam):
    """The whole-data cost (32) and its gradient by autograd, and the authors' one-vs-all cost."""
    W1, W2 = _t(W1).requires_grad_(), _t(W2).requires_grad_()
    Z = _with_bias(_t(X), bias) @ W1.T
    H = torch.nn.functional.silu(Z) if activation == "swish" else torch.relu(Z)
    out = _with_bias(H, bias) @ W2.T
    yt = torch.as_tensor(np.asarray(y, dtype=np.int64))
    loss = torch.nn.functional.cross_entropy(out, yt)
    g1, g2 = torch.autograd.grad(loss + lam * (W1.pow(2).sum() + W2.pow(2).sum()), (W1, W2))
    logp = torch.log_softmax(out.detach(), dim=1)
    onehot = torch.nn.functional.one_hot(yt, out.shape[1]).to(torch.float64)
    ova = (-onehot * logp - (1 - onehot) * torch.log1p(-logp.exp())).sum(dim=1).mean()
    return float(loss.detach()), float(ova), g1.numpy(), g2.numpy()


def scgd_run(A, b, c, x1, zeta0, zeta, zeta2, xi, T, q, eta, beta, alpha):
    """The baselines with the inner map's Jacobian from autograd (a vector-Jacobian product)."""
    A, b, c = _t(A), _t(b), _t(c)
    M = b.shape[0]
    X = _t(x1).repeat(M, 1)
    Y = X @ A.T + b + _t(zeta0)
    Mo = torch.zeros_like(X)
    traj = []
    for t in range(1, int(T) + 1):
        traj.append(X.mean(dim=0).numpy().copy())
        Y = (1 - beta) * Y + beta * (X @ A.T + b + _t(zeta[t - 1]))
        Xg = X.clone().requires_grad_()
        inner = Xg @ A.T + b + _t(zeta2[t - 1])
        grad_f = (Y - c) / torch.sqrt(1 + (Y - c) ** 2) + _t(xi[t - 1])
        (D,) = torch.autograd.grad(inner, Xg, grad_outputs=grad_f)
        if alpha > 0:
            Mo = (1 - alpha) * Mo + alpha * D
            X = X - eta * Mo
        else:
            X = X - eta * D
        if t % q == 0:
            X = X.mean(dim=0).repeat(M, 1)
            if alpha > 0:
                Y, Mo = Y.mean(dim=0).repeat(M, 1), Mo.mean(dim=0).repeat(M, 1)
    t = np.arange(1, int(T) + 1)
    return np.array(traj), M + 3 * M * t, t // int(q)


def constrained_run(W1, W2, X, y, batches, tau, rho_a, rho_alpha, gamma_a, gamma_alpha, U, c, curvature):
    """Algorithm 2 with one client: this adapter's surrogate update, Lemma 1 and move, with the
    mini-batch gradient from autograd on the flattened parameters."""
    n1 = W1.size
    w = torch.cat([_t(W1).reshape(-1), _t(W2).reshape(-1)])
    state = (0.0, np.zeros(w.numel()), 0.0)
    history = []
    for t, batch in enumerate(batches, start=1):
        loss, g1, g2 = loss_grad(w[:n1].reshape(W1.shape).numpy(), w[n1:].reshape(W2.shape).numpy(), X[batch],
                                 y[batch], "swish", False)
        g = np.concatenate([g1.reshape(-1), g2.reshape(-1)])
        state = surrogate_update(*state, loss, g, w.numpy(), rho_a / t ** rho_alpha, tau, curvature)
        w_bar, slack, nu = closed_form_step(*state, U, c)
        w = _t(move(w.numpy(), w_bar, gamma_a / t ** gamma_alpha)[0])
        history.append([state[0], nu, slack, loss])
    h = np.array(history)
    return w[:n1].reshape(W1.shape).numpy(), w[n1:].reshape(W2.shape).numpy(), h[:, 0], h[:, 1], h[:, 2], h[:, 3]


def mfcgd_run(A, b, c, x1, zeta0, xi0, zeta, xi, T, q, k, n, c1, c2, c3, gamma, C_g, C_f, matrix, rho, theta):
    """Algorithm 1 with the clients as one batch of tensors: ∇f from autograd on
    f(y; ξ) = Σ_i sqrt(1 + (y_i − c_i)²) + ⟨ξ, y⟩, the recursions and projections per client."""
    A, b, c = _t(A), _t(b), _t(c)
    M, d = b.shape[0], A.shape[1]

    def grad_f(Y, Xi):
        Y = Y.clone().requires_grad_()
        (g,) = torch.autograd.grad((torch.sqrt(1 + (Y - c) ** 2) + _t(Xi) * Y).sum(), Y)
        return g

    def project(T_, r):                        # per client: Frobenius / Euclidean ball of radius r
        norms = T_.reshape(M, -1).norm(dim=1).reshape((M,) + (1,) * (T_.dim() - 1))
        return torch.where(norms <= r, T_, T_ * (r / norms))
    X = _t(x1).repeat(M, 1)
    H = torch.stack([X @ A.T + b + _t(zeta0[:, j]) for j in range(q)]).mean(dim=0)
    U = A.expand(M, -1, -1).clone()
    V = torch.stack([grad_f(H, xi0[:, j]) for j in range(q)]).mean(dim=0)
    state = (np.zeros(d), np.zeros(d))

    def diag_of(w_bar):
        nonlocal state
        if matrix == "identity":
            return torch.ones(d)
        a, a_max, diag = adaptive_matrix(matrix, state[0], state[1], w_bar.numpy(), rho, theta)
        state = (a, a_max)
        return _t(diag)
    W = torch.einsum("mpd,mp->md", U, V)
    Adiag = diag_of(W.mean(dim=0))
    traj = []
    for t in range(1, int(T) + 1):
        x_bar = X.mean(dim=0)
        traj.append(x_bar.numpy().copy())
        eta, al, be, va = storm_weights(k, n, c1, c2, c3, t)
        if t % q == 0:
            Adiag = diag_of(W.mean(dim=0))
            X_new = (x_bar - gamma * eta * W.mean(dim=0) / Adiag).repeat(M, 1)
        else:
            X_new = X - gamma * eta * W / Adiag
        Z = _t(zeta[t - 1])
        H_new = (X_new @ A.T + b + Z) + (1 - al) * (H - (X @ A.T + b + Z))
        U = project(A + (1 - be) * (U - A), C_g)
        V = project(grad_f(H_new, xi[t - 1]) + (1 - va) * (V - grad_f(H, xi[t - 1])), C_f)
        H, X = H_new, X_new
        W = torch.einsum("mpd,mp->md", U, V)
    t = np.arange(1, int(T) + 1)
    return np.array(traj), 2 * q * M + 2 * M * t, t // int(q)


# The server's assembly of replies, partitions, the divergence and tuning rules, the VFL clocks
# and the theorems' right sides hold no tensors: the plain-NumPy adapter's functions serve here too.
from refimpl.conformance.numpy_adapter import (client_aggregate, divergence_stop, partition,  # noqa: E402,F401
                                               theorem_rhs, tune_select, vfl_async_events, vfl_round_time)
