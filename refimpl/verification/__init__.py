"""The numerical checks of every theorem, lemma and identity refimpl implements, one module per
paper (:mod:`.core` for the shared network and kernels, :mod:`.ssca`, :mod:`.vfl`, :mod:`.mfcgd`),
registered in :mod:`.registry` and run by ``refimpl verify`` (:mod:`refimpl.tools.verify`)."""
