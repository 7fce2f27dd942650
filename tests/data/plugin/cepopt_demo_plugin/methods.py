"""A method added to the Sharon family from outside cepopt."""

from cepopt.registry import register
from cepopt.sharon.plan import SharonPlan


@register("sharon", "plugin-empty", "a plug-in's method: share nothing")
def empty(problem, *, time_limit=None, seed=0):
    return SharonPlan.empty()
