"""Multi-run tools above the papers: sweeps (:mod:`.sweep`), the papers' figures
(:mod:`.reproduce`), the report (:mod:`.report`), benchmarks (:mod:`.bench`) and the runner of the
verification checks (:mod:`.verify`)."""
