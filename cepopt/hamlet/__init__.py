"""Hamlet (SIGMOD'21): shared online trend aggregation with per-burst sharing decisions.

specs/hamlet.md. ``decide`` runs a policy on one burst; ``run_policy`` on a sequence of bursts;
``cepopt.hamlet.cost`` is Eq. 7 (``benefit`` / ``shared_cost`` / ``nonshared_cost``); the executor kernels live in
``cepopt.executor.greta`` and ``cepopt.executor.hamlet_kernel``.
"""

from cepopt.hamlet.cost import GroupState, benefit, nonshared_cost, shared_cost
from cepopt.hamlet.decide import decide, run_policy
from cepopt.hamlet.graphlets import Burst
from cepopt.hamlet.plan import HamletPlan
from cepopt.hamlet.policy import Decision, choose_query_set, get_policy, plan_space

__all__ = ["Burst", "Decision", "GroupState", "HamletPlan", "benefit", "choose_query_set", "decide",
           "get_policy", "nonshared_cost", "plan_space", "run_policy", "shared_cost"]
