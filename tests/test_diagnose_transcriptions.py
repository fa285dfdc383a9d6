"""refimpl diagnose against THEIR implementations written here, sharing no code with the package:
for each convention of a paper, THEIR dump from an independent transcription under that
convention, in the documented per-round names only; diagnose must name exactly that convention
(a switch that changes nothing is never named, a planted bug is named as unexplained).

What THEIR code takes from OURS is the data only — the problem instance as OURS's trace records it
(for MFCGD, the synthetic problem's A, b_m, c_m) and, where a test says so, the samples and starting
state OURS's dump holds — as an engineer comparing implementations feeds both the same inputs.
Every update is written out here; nothing is imported from refimpl but its command line and the
embedded data set."""
import numpy as np
import pytest

from refimpl.cli import main

STEPS = 12


def _out(capsys):
    c = capsys.readouterr()
    return c.out + c.err


def _per_round(trace_dir):
    from refimpl.core.replay import read_dump
    return read_dump(str(trace_dir))


def _instance_of(trace_dir):
    """The run's problem instance as its trace records it (problem_A, problem_b, problem_c and the
    noise scales): the data THEIR code runs on, read from OURS's trace, not from refimpl's code."""
    import json
    from types import SimpleNamespace
    z = np.load(trace_dir / "trace.npz")
    inst = json.loads((trace_dir / "trace.json").read_text())["config"]["problem_instance"]
    assert inst["class"] == "SyntheticComposition"
    return SimpleNamespace(A=z["array_problem_A"], b=z["array_problem_b"], c=z["array_problem_c"], s_g=inst["s_g"],
                           r_f=inst["r_f"])


def _their_adamfcgd(pr, ours, T, *, matrix, k=1.0, n=1000.0, c=10.0, gamma=0.5, q=10, rho=0.2, theta=0.9,
                    gamma_exponent=1.0 / 3.0, rng=None, stale_sample_client=None):
    """THEIR AdaMFCGD on the synthetic problem g_m(x; ζ) = A x + b_m + ζ, f_m(y; ξ) =
    Σ_i sqrt(1 + (y_i − c_{m,i})²) + ⟨ξ, y⟩, from the state of step 1 and the samples of every
    step that OURS's dump holds. Algorithm 1: every q-th step the server averages w and x,
    regenerates A (``matrix``: "adam" diag(sqrt(a) + ρ) with a ← θa + (1 − θ)w̄²; "amsgrad" the
    same with the running maximum of a; "norm" (a + ρ)I with a ← θa + (1 − θ)||w̄||) and moves
    x̄ by −ηγA⁻¹w̄; otherwise each client moves x by −ηγA⁻¹w. Then the STORM-type recursions with
    α, β, ϱ = min(1, c η²), u and v projected on the balls of radii ||A||_F and sqrt(p) + r_f.
    With ``rng``, THEIR own inputs: x_1 drawn, h, u, v from q samples of their own, and their own
    samples ζ ~ N(0, s_g² I), ξ uniform on the sphere of radius r_f at every step.
    ``stale_sample_client``: a planted bug in that client only — its v recursion evaluates the old
    ∇f(h_t) without the step's sample ξ."""
    A_, b, cc, r_f = pr.A, pr.b, pr.c, pr.r_f
    M, p = b.shape
    d = A_.shape[1]
    C_g, C_f = float(np.sqrt(np.sum(A_ * A_))), float(np.sqrt(p) + r_f)
    if rng is None:
        x, h, u, v = (np.array(ours[1][name], dtype=float) for name in ("x", "h", "u", "v"))
        samples = [(ours[t]["zeta"], ours[t]["xi"]) for t in range(1, T + 1)]
    else:
        def sphere(shape):
            a = rng.standard_normal(shape + (p,))
            return r_f * a / np.linalg.norm(a, axis=-1, keepdims=True)
        x = np.tile(0.1 * rng.standard_normal(d), (M, 1))
        z0, xi0 = pr.s_g * rng.standard_normal((M, q, p)), sphere((M, q))
        h = np.stack([np.mean([A_ @ x[m] + b[m] + z0[m, j] for j in range(q)], axis=0) for m in range(M)])
        u = np.stack([A_.copy() for _ in range(M)])
        v = np.stack([np.mean([(h[m] - cc[m]) / np.sqrt(1 + (h[m] - cc[m]) ** 2) + xi0[m, j] for j in range(q)],
                              axis=0) for m in range(M)])
        samples = [(pr.s_g * rng.standard_normal((M, p)), sphere((M,))) for _ in range(T)]
    acc = np.zeros(d) if matrix != "norm" else 0.0
    top = np.zeros(d)

    def phi(z):
        return z / np.sqrt(1.0 + z * z)

    def project(a, radius):
        norm = float(np.sqrt(np.sum(a * a)))
        return a if norm <= radius else a * (radius / norm)

    def generate(w_bar):
        nonlocal acc, top
        if matrix == "norm":
            acc = theta * acc + (1 - theta) * float(np.sqrt(np.sum(w_bar * w_bar)))
            return np.full(d, acc + rho)
        acc = theta * acc + (1 - theta) * w_bar * w_bar
        if matrix == "amsgrad":
            top = np.maximum(top, acc)
            return np.sqrt(top) + rho
        return np.sqrt(acc) + rho

    w = np.stack([u[m].T @ v[m] for m in range(M)])
    diag = generate(w.mean(axis=0))
    dump = {}
    for t in range(1, T + 1):
        eta = k / (n + t) ** gamma_exponent
        rec = {"x": x.copy(), "h": h.copy(), "u": u.copy(), "v": v.copy(), "w": w.copy(), "eta": np.array(eta)}
        if t % q == 0:
            w_bar = w.mean(axis=0)
            diag = generate(w_bar)
            x_next = np.tile(x.mean(axis=0) - eta * gamma * w_bar / diag, (M, 1))
        else:
            x_next = x - eta * gamma * w / diag
        rec["A"] = diag.copy()
        alpha, beta, varrho = (min(1.0, c * eta * eta),) * 3
        zeta, xi = samples[t - 1]
        for m in range(M):
            g_new, g_old = A_ @ x_next[m] + b[m] + zeta[m], A_ @ x[m] + b[m] + zeta[m]
            h_next = g_new + (1 - alpha) * (h[m] - g_old)
            u[m] = project(A_ + (1 - beta) * (u[m] - A_), C_g)
            old_xi = 0.0 if m == stale_sample_client else xi[m]
            v[m] = project(phi(h_next - cc[m]) + xi[m] + (1 - varrho) * (v[m] - phi(h[m] - cc[m]) - old_xi), C_f)
            h[m] = h_next
            w[m] = u[m].T @ v[m]
        x = x_next
        rec.update(zeta=zeta, xi=xi, x_next=x_next.copy(), alpha=np.array(alpha), beta=np.array(beta),
                   varrho=np.array(varrho))
        dump.update({f"r{t}_{name}": value for name, value in rec.items()})
    return dump


@pytest.fixture(scope="module")
def adamfcgd_ours(tmp_path_factory):
    """refimpl's AdaMFCGD with its defaults (Adam-type matrix), every step dumped."""
    out = tmp_path_factory.mktemp("mfcgd") / "ours"
    assert main(["run", "adamfcgd", "--steps", str(STEPS), "--dump-rounds", "all", "--quiet", "--out", str(out)]) == 0
    return out, _per_round(out), _instance_of(out)


def test_the_transcription_with_refimpls_defaults_agrees(adamfcgd_ours, tmp_path, capsys):
    """The transcription itself: under refimpl's conventions every dumped step agrees."""
    out, ours, pr = adamfcgd_ours
    np.savez(tmp_path / "theirs.npz", **_their_adamfcgd(pr, ours, STEPS, matrix="adam"))
    capsys.readouterr()
    assert main(["diagnose", str(out), str(tmp_path / "theirs.npz"), "--tol", "1e-9", "--no-rerun",
                 "--allow-missing", "x_bar,w_bar,communication"]) == 0, _out(capsys)


@pytest.mark.parametrize("matrix", ["norm", "amsgrad"])
def test_each_adaptive_matrix_is_named_from_their_own_inputs(adamfcgd_ours, tmp_path, capsys, matrix):
    """THEIR initial point, initial estimators and samples, all their own, read back from the
    per-step names r1_x, r1_h, r1_u, r1_v, r<t>_zeta, r<t>_xi."""
    out, ours, pr = adamfcgd_ours
    np.savez(tmp_path / "theirs.npz", **_their_adamfcgd(pr, ours, STEPS, matrix=matrix,
                                                         rng=np.random.default_rng(21)))
    capsys.readouterr()
    assert main(["diagnose", str(out), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 3
    text = _out(capsys)
    assert "round 1, zeta" in text                             # OURS and THEIRS part at their inputs
    assert f"with --matrix {matrix} all rounds agree" in text
    assert text.count("all rounds agree (worst") == 1
    assert "the reruns start from THEIR initial point, initial estimators, samples (read from THEIR file)" in text


def test_a_planted_bug_is_named_where_it_starts_and_left_unexplained(adamfcgd_ours, tmp_path, capsys):
    """THEIR η_t = k/(n + t)^0.34 (for 1/3): first visible in step 1's x_next, explained by no switch."""
    out, ours, pr = adamfcgd_ours
    np.savez(tmp_path / "theirs.npz", **_their_adamfcgd(pr, ours, STEPS, matrix="adam", gamma_exponent=0.34))
    capsys.readouterr()
    assert main(["diagnose", str(out), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 1
    text = _out(capsys)
    assert "round 1, eta" in text
    assert "no convention switch of refimpl (nor a pair) makes every round agree" in text


def test_a_one_client_bug_is_named_by_client_and_data_flow(adamfcgd_ours, tmp_path, capsys):
    """A bug in client 2's v recursion only (the old ∇f(h_t) without its sample ξ): the first
    difference is step 2's v of client 2 — its x, h and u (and every other client's) agree, and
    the samples before them; no switch explains it."""
    out, ours, pr = adamfcgd_ours
    np.savez(tmp_path / "theirs.npz", **_their_adamfcgd(pr, ours, STEPS, matrix="adam", stale_sample_client=2))
    capsys.readouterr()
    assert main(["diagnose", str(out), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 1
    text = _out(capsys)
    line = next(x for x in text.splitlines() if x.startswith("round 2, v at entry"))
    assert "= client 2, coordinate 0" in line
    agreeing = line.split("agreeing before it: ")[1]
    assert [w.split()[0] for w in agreeing.split(", ")] == ["zeta", "xi", "x", "h", "u"]
    assert "no convention switch of refimpl (nor a pair) makes every round agree" in text


# ------------------------------------------------------------------------------------ Flex-VFL

def _quadrants(side=28):
    """The four image quadrants (top-left, top-right, bottom-left, bottom-right), row-major pixels."""
    h = side // 2
    return [np.array([(r0 + i) * side + c0 + j for i in range(h) for j in range(h)])
            for r0, c0 in ((0, 0), (0, h), (h, 0), (h, h))]


def _their_rates(rule, taus, tau0, mu):
    """THEIR step sizes η^r (rows r = 1..T, parties 0..K) under an adaptive rule, transcribed from
    the paper and from the authors' code: ("paper", A): η^{r+1} = A/(τ^r w̄^r) with w̄ the largest
    weight of local momentum over τ steps, (1 − μ^τ)/(1 − μ), and η^1 from the dummy round's τ^0;
    ("authors-taumax", lr): η^1 = lr/τ^max (τ^max over the round's table), then η ← η τ^{prev}/τ^r;
    ("authors", lr, cpus): the authors' code, lrs = lr/(10·max(1 − cpu) + 1) over each party's whole
    utilisation row, the previous step count int(10·max(1 − cpu) + 1), then lrs ← lrs·prev/τ^r."""
    kind, a = rule[:2]
    T = len(taus)
    if kind == "paper":
        wbar = lambda t: (1 - mu ** t) / (1 - mu)
        prev = [np.asarray(tau0, dtype=float)] + [taus[r].astype(float) for r in range(T - 1)]
        return np.array([a / (p * wbar(p)) for p in prev])
    if kind == "authors":
        cpus = rule[2]
        eta = np.array([abs(a / (10 * np.max(1 - c) + 1)) for c in cpus])
        before = np.array([int(10 * np.max(1 - c) + 1) for c in cpus], dtype=float)
    else:
        before = taus.max(axis=0).astype(float)
        eta = a / before
    out = []
    for r in range(T):
        out.append(eta)
        eta, before = eta * before / taus[r], taus[r].astype(float)
    return np.array(out)


def _their_flexvfl(ds, T, rng, *, momentum="reset", mu=0.9, eta=0.05, B=64, O=16, tau=None, rule=None, tau0=None):
    """THEIR Flex-VFL: 4 parties with linear encoders h_k = W_k x_k + b_k (O outputs, bias in
    column 0 of the (O, 1 + 196) block), a linear server head on the concatenated embeddings,
    mean cross-entropy. In round r each party k (the server is k = 0) runs τ_k local steps of
    local momentum, u ← μu + g, θ ← θ − ηu, on the round's batch, changing only its own block
    and using the round-start server head and embeddings for the others. ``momentum``: "reset"
    (u = 0 at the start of every round) or "persistent" (u carried over). THEIR own initial
    point, batches and τ table (``tau``: a (T, 5) table, or drawn). ``rule``: an adaptive rule
    (:func:`_their_rates`; ``tau0`` the paper rule's dummy round), else the fixed ``eta``."""
    blocks = _quadrants()
    X = [ds.X_train[:, b] for b in blocks]
    y = ds.y_train
    K = len(blocks)
    theta = [rng.uniform(-0.1, 0.1, 10 * (1 + K * O))] + [rng.uniform(-0.05, 0.05, O * 197) for _ in range(K)]
    u = [np.zeros_like(t) for t in theta]
    taus = rng.integers(1, 6, (T, K + 1)) if tau is None else tau
    rates = np.full((T, K + 1), eta) if rule is None else _their_rates(rule, taus, tau0, mu)
    dump = {}

    def head(theta0, H, yb):
        W = theta0.reshape(10, -1)
        Z = H @ W[:, 1:].T + W[:, 0]
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        P[np.arange(len(yb)), yb] -= 1.0
        P /= len(yb)
        return np.concatenate([P.sum(axis=0)[:, None], P.T @ H], axis=1).ravel(), P @ W[:, 1:]

    def embed(k, th, batch):
        W = th.reshape(O, -1)
        return X[k][batch] @ W[:, 1:].T + W[:, 0]

    for r in range(1, T + 1):
        batch = rng.choice(len(y), B, replace=False)
        H = np.concatenate([embed(k, theta[k + 1], batch) for k in range(K)], axis=1)
        theta0_start = theta[0].copy()
        rec = {"batch": batch, "H": H, "tau": taus[r - 1].copy(), "eta": rates[r - 1].copy()}
        for k in range(K + 1):
            if momentum == "reset":
                u[k] = np.zeros_like(theta[k])
            rows, grads, moms = [theta[k].copy()], [], []
            for _ in range(int(taus[r - 1][k])):
                if k == 0:
                    g = head(theta[0], H, y[batch])[0]
                else:
                    Hk = H.copy()
                    Hk[:, (k - 1) * O:k * O] = embed(k - 1, theta[k], batch)
                    dH = head(theta0_start, Hk, y[batch])[1][:, (k - 1) * O:k * O]
                    g = np.concatenate([dH.sum(axis=0)[:, None], dH.T @ X[k - 1][batch]], axis=1).ravel()
                u[k] = mu * u[k] + g
                theta[k] = theta[k] - rates[r - 1][k] * u[k]
                rows.append(theta[k].copy())
                grads.append(g)
                moms.append(u[k].copy())
            rec.update({f"theta{k}": np.stack(rows), f"grad{k}": np.stack(grads), f"momentum{k}": np.stack(moms)})
        dump.update({f"r{r}_{name}": value for name, value in rec.items()})
    return dump


VFL_OURS = ["run", "flexvfl", "--rounds", "3", "--optimizer", "momentum:0.9", "--dump-rounds", "all", "--quiet"]


@pytest.fixture(scope="module")
def flexvfl_ours(tmp_path_factory):
    out = tmp_path_factory.mktemp("vfl") / "ours"
    assert main([*VFL_OURS, "--out", str(out)]) == 0
    return out


def test_flexvfl_transcription_under_refimpls_conventions_differs_only_in_its_inputs(flexvfl_ours, tmp_path,
                                                                                      capsys):
    """Reset momentum (refimpl's default) from THEIR own initial point, batches and τ table: the
    baseline rerun from those inputs agrees, so the verdict names the inputs, not a switch."""
    from refimpl.core.data import mnist_5k
    np.savez(tmp_path / "theirs.npz", **_their_flexvfl(mnist_5k(), 3, np.random.default_rng(4)))
    capsys.readouterr()
    assert main(["diagnose", str(flexvfl_ours), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 4
    text = _out(capsys)
    assert "the difference is in the inputs" in text and "with --" not in text


def test_the_authors_server_steps_are_named_as_their_protocol(flexvfl_ours, tmp_path, capsys):
    """THEIR server takes Q = 10 steps a round (the authors' protocol), the parties the local step
    counts OURS's run drew (read from OURS's trace, as the data are); THEIR dump holds no τ table,
    so the reruns take OURS's clock: the verdict names --protocol authors, and nothing else."""
    from refimpl.core.data import mnist_5k
    taus = np.load(flexvfl_ours / "trace.npz")["array_tau"].copy()
    taus[:, 0] = 10
    dump = _their_flexvfl(mnist_5k(), 3, np.random.default_rng(4), tau=taus)
    np.savez(tmp_path / "theirs.npz", **{k: v for k, v in dump.items() if not k.endswith("_tau")})
    capsys.readouterr()
    assert main(["diagnose", str(flexvfl_ours), str(tmp_path / "theirs.npz"), "--tol", "1e-9",
                 "--allow-missing", "tau"]) == 3
    text = _out(capsys)
    assert "with --protocol authors all rounds agree" in text, text[-2000:]
    assert text.count("all rounds agree (worst") == 1
    assert "THEIR file holds no τ table: the reruns use OURS's" in text


def test_flexvfl_persistent_momentum_is_named(flexvfl_ours, tmp_path, capsys):
    from refimpl.core.data import mnist_5k
    np.savez(tmp_path / "theirs.npz", **_their_flexvfl(mnist_5k(), 3, np.random.default_rng(4),
                                                        momentum="persistent"))
    capsys.readouterr()
    assert main(["diagnose", str(flexvfl_ours), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 3
    text = _out(capsys)
    assert "with --momentum persistent all rounds agree" in text
    assert text.count("all rounds agree (worst") == 1
    assert "the reruns start from THEIR initial point, batch schedule, τ table (read from THEIR file)" in text


ADAPTIVE_OURS = ["run", "adaptive-flexvfl", "--rounds", "3", "--optimizer", "momentum:0.9", "--A", "0.3",
                 "--dump-rounds", "all", "--quiet"]


@pytest.fixture(scope="module")
def adaptive_ours(tmp_path_factory):
    out = tmp_path_factory.mktemp("adaptive") / "ours"
    assert main([*ADAPTIVE_OURS, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("rule, code, words", [
    ("paper", 4, "the difference is in the inputs"),
    ("authors-taumax", 3, "with --adaptive-rule authors-taumax all rounds agree"),
])
def test_adaptive_flexvfl_rules_from_a_transcription(adaptive_ours, tmp_path, capsys, rule, code, words):
    """THEIR Adaptive Flex-VFL (A = 0.3, local momentum 0.9) from their own initial point, batches,
    τ table and τ^0, under the paper's rule (η from A/(τ w̄)) or the authors' (lr/τ, no w̄): the
    paper's rule is refimpl's, so only the inputs differ; the authors' is named as the switch."""
    from refimpl.core.data import mnist_5k
    tau0 = np.array([2, 4, 1, 3, 5])
    dump = _their_flexvfl(mnist_5k(), 3, np.random.default_rng(8), rule=(rule, 0.3), tau0=tau0)
    np.savez(tmp_path / "theirs.npz", **dump, tau0=tau0)
    capsys.readouterr()
    assert main(["diagnose", str(adaptive_ours), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == code
    text = _out(capsys)
    assert words in text, text[-1500:]
    if rule == "authors-taumax":
        assert "round 1, eta" in text


def test_the_authors_adaptive_rule_from_their_utilisation_rows_is_named(tmp_path, capsys):
    """THEIR Adaptive Flex-VFL as the authors' code runs it on a CPU trace: the machines' clipped
    utilisation rows (the assignment OURS's trace records), their τ = int(10(1 − cpu) + 1) from
    column r − 1 in round r, and their rates lr/(10·max(1 − cpu) + 1), lr ← lr·prev/τ. The dump
    holds only per-round names; the rerun reads the utilisation from OURS's CPU trace. Named:
    --adaptive-rule authors, not the τ^max rule, whose rates start elsewhere."""
    from refimpl.core.data import mnist_5k
    cpu = np.random.default_rng(12).uniform(-0.05, 1.0, size=(8, 6))
    np.save(tmp_path / "cpu.npy", cpu)
    ours = tmp_path / "ours"
    assert main([*ADAPTIVE_OURS, "--speeds", f"cputrace:{tmp_path / 'cpu.npy'}", "--timeout", "10",
                 "--out", str(ours)]) == 0
    rows = np.clip(cpu[np.load(ours / "trace.npz")["array_machines"]], 0, 1)
    taus = np.array([[int(10 * (1 - rows[k, r - 1]) + 1) for k in range(5)] for r in (1, 2, 3)])
    dump = _their_flexvfl(mnist_5k(), 3, np.random.default_rng(8), tau=taus, rule=("authors", 0.3, rows))
    np.savez(tmp_path / "theirs.npz", **dump)
    capsys.readouterr()
    assert main(["diagnose", str(ours), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 3
    text = _out(capsys)
    assert "with --adaptive-rule authors all rounds agree" in text, text[-1500:]
    assert text.count("all rounds agree (worst") == 1
