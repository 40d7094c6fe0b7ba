"""Structure-aware kernels and generative mixture classifiers (seed 003, §4.1-4.3.1).

The variational density model of the pool, the CMM classifiers built on it, and the kernels
that carry the pool's structure into an SVM (RWM, a project-defined GMM kernel, LAP, RBF).
"""
