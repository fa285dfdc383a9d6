"""[FlexVFL]'s methods and convention values, written once: the paper description
(:mod:`refimpl.vfl.paper`), the run assembly (:mod:`refimpl.vfl.experiment`) and the policies
(:mod:`refimpl.vfl.policies`) all read them from here. No NumPy: tools import it to list options."""

#: method id of `refimpl run` → the policy it composes
METHODS = {"flexvfl": "flex", "adaptive-flexvfl": "adaptive", "sync-vfl": "sync", "async-vfl": "async",
           "pbcd": "pbcd"}

#: the methods FlexVFL runs round by round (the policies of refimpl.vfl.policies), in that order
ROUND_METHODS = tuple(v for v in METHODS.values() if v != "async")

#: the run protocols: "refimpl" (the paper's reading) or "authors" (the authors' code)
RUN_PROTOCOLS = ("refimpl", "authors")

# The conventions each protocol picks; an explicit option wins. "authors": the authors'
# ImageNet/ModelNet loops (docs/flexvfl.md, "Conventions"): a new optimizer every round, one
# permutation per epoch, their adaptive rule, S in units of timeout/Q, torch's initialisation.
CONVENTIONS = {
    "momentum": {"refimpl": "reset", "authors": "reset", "allowed": ("reset", "persistent")},
    "batch_order": {"refimpl": "independent", "authors": "epoch", "allowed": ("independent", "epoch")},
    "adaptive_rule": {"refimpl": "paper", "authors": "authors", "allowed": ("paper", "authors", "authors-taumax")},
    "server_time_unit": {"refimpl": "step", "authors": "timeout-over-Q", "allowed": ("step", "timeout-over-Q")},
    "init_scheme": {"refimpl": "glorot", "authors": "torch", "allowed": ("glorot", "torch")},
}

MOMENTUM = CONVENTIONS["momentum"]["allowed"]
BATCH_ORDERS = CONVENTIONS["batch_order"]["allowed"]
ADAPTIVE_RULES = CONVENTIONS["adaptive_rule"]["allowed"]
SERVER_TIME_UNITS = CONVENTIONS["server_time_unit"]["allowed"]
INIT_SCHEMES = CONVENTIONS["init_scheme"]["allowed"]
