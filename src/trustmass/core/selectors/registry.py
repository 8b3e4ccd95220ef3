"""Every kept-set rule by name: ``REGISTRY`` maps a name to a configured rule.

The rules live in their own modules and declare their contracts there
(``trustmass.core.selectors.contract``), their part in the audit and their registry names included
(``registered``: section -> {name: constructor options}); this module collects those names, section by
section, and derives the audit's lists from the declarations.  Adding a rule: its class (with its
contract and ``registered``) in a rule module of ``RULE_MODULES``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from trustmass.core.selectors import ceiling_rules, deployed, value_aware
from trustmass.core.selectors.contract import Contract, contract

#: the registry's sections, in its order: the operator's own rules (the ceiling's); the audited deployed rules
#: (spec §5) and the positional control; related methods (002 count-debiased H2O and value-aware blocks,
#: 004 block-select).  Within a section: module order (RULE_MODULES), class order, then each class's names.
SECTIONS = ("operator", "deployed", "related")
#: the modules whose classes declare registry names
RULE_MODULES = (ceiling_rules, deployed, value_aware)


def registered_classes(modules: tuple[ModuleType, ...] = RULE_MODULES) -> list[type]:
    """The classes the modules define (not import) that declare ``registered`` themselves, in module
    order, then definition order."""
    return [
        obj
        for module in modules
        for obj in vars(module).values()
        if isinstance(obj, type) and obj.__module__ == module.__name__ and "registered" in vars(obj)
    ]


def collect(modules: tuple[ModuleType, ...] = RULE_MODULES) -> dict:
    """name -> configured rule, section by section (``SECTIONS``); the error names the class and the fix."""
    entries: dict[str, list] = {section: [] for section in SECTIONS}
    for cls in registered_classes(modules):
        for section, names in cls.registered.items():
            if section not in entries:
                raise ValueError(f"{cls.__name__}.registered names section {section!r}; fix: use one of {SECTIONS}")
            entries[section] += [(name, cls, options) for name, options in names.items()]
    registry: dict = {}
    for name, cls, options in (entry for section in SECTIONS for entry in entries[section]):
        if name in registry:
            raise ValueError(
                f"{cls.__name__}.registered: {name!r} is already {registry[name]!r}; fix: pick another name"
            )
        registry[name] = cls(**options)
    return registry


REGISTRY: dict = collect()


def names_where(declares: Callable[[Contract], bool]) -> tuple[str, ...]:
    """The registered rules whose contract satisfies `declares`, in registry order (read when
    called: a rule registered later is included)."""
    return tuple(name for name, rule in REGISTRY.items() if declares(contract(rule)))


def audit_rules() -> tuple[str, ...]:
    """The rules the audit scores: every rule declaring an audit role."""
    return names_where(lambda c: c.in_audit)


#: the paper's audited deployed rules (spec §5): SnapKV, H2O, Quest, StreamingLLM
AUDITED = names_where(lambda c: c.audit_role == "audited")
#: Figure 3's rules: the audited deployed rules and the positional control
FIG3_RULES = names_where(lambda c: c.drawn_in_figure3)
