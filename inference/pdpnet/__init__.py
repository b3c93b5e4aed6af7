"""Topic models as networks of Dirichlet and Pitman-Yor vectors (Buntine, Du & Nurmi; issue 28): a declarative
spec (:mod:`.spec`), its compilation to arrays (:mod:`.compile`) and one sampler for any network (:mod:`.kernels`,
:mod:`.sampler`)."""
