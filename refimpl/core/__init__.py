"""What the three papers share: the two-layer network with hand-derived gradients (:mod:`.model`),
Numba kernels beside their NumPy twins (:mod:`.kernels`), data sets (:mod:`.data`), client
partitions and batch schedules (:mod:`.partition`), step-size schedules (:mod:`.schedules`),
traces (:mod:`.trace`), figures (:mod:`.plots`) and input validation (:mod:`.validate`).
Imports no paper."""
