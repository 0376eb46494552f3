"""Skill dimensions (language, gender, ...) and the queue combinations they make.

The dimensions and their allowed values come from settings (`SWITCHBOARD_SKILLS`),
so a center can add a dimension without code changes. The order of the dimensions
is the order of the parts of a queue name: `Q#Spanish#M`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from queues_app.steps import LEVEL_MAX, LEVEL_MIN


class SkillError(ValueError):
    """An agent's or a caller's input the domain refuses (skills or preferences the catalog
    does not allow, a name it may not hold); `field` names the dimension or the field."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SkillCatalog:
    dimensions: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def from_mapping(cls, mapping: dict[str, list[str]]) -> SkillCatalog:
        dims = []
        for name, values in mapping.items():
            if not values:
                raise SkillError(name, f"skill dimension {name!r} has no values")
            for value in values:
                # `#` joins the parts of a queue name, `@` ends it in a sub-queue's partition key.
                if "#" in value or "@" in value or not value.strip():
                    raise SkillError(name, f"skill value {value!r} may not be blank or contain '#' or '@'")
            dims.append((name, tuple(values)))
        if not dims:
            raise SkillError("", "at least one skill dimension is needed")
        return cls(tuple(dims))

    @classmethod
    def from_settings(cls) -> SkillCatalog:
        from django.conf import settings

        return cls.from_mapping(settings.SWITCHBOARD_SKILLS)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.dimensions)

    def values(self, dimension: str) -> tuple[str, ...]:
        return dict(self.dimensions)[dimension]

    def validate_agent_skills(self, skills: dict) -> dict[str, list[str]]:
        """Every dimension needs at least one allowed value; returns them normalized
        (in catalog order, without duplicates). A dimension's values may be given with
        their levels (`{"French": 5}`: `validate_levels` reads those)."""
        clean = {}
        for name, allowed in self.dimensions:
            given = skills.get(name) or []
            if isinstance(given, str):
                given = [given]
            elif isinstance(given, dict):
                given = list(given)
            if not given:
                raise SkillError(name, f"choose at least one {name}")
            unknown = [v for v in given if v not in allowed]
            if unknown:
                raise SkillError(name, f"unknown {name} {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}")
            clean[name] = [v for v in allowed if v in given]
        extra = set(skills) - set(self.names)
        if extra:
            field = sorted(extra)[0]
            raise SkillError(field, f"unknown skill dimension {field!r}")
        return clean

    def validate_levels(self, skills: dict) -> Levels:
        """The levels given with the skills (`{"language": {"French": 5, "English": 2}}`),
        only those above 1: a value given in a plain list, or at level 1, is level 1."""
        levels: Levels = {}
        for name, given in skills.items():
            if not isinstance(given, dict):
                continue
            for value, level in given.items():
                if isinstance(level, bool) or not isinstance(level, int) or not LEVEL_MIN <= level <= LEVEL_MAX:
                    raise SkillError(name, f"the level of {name} {value!r} must be a whole number 1 to {LEVEL_MAX}")
                if level > LEVEL_MIN:
                    levels.setdefault(name, {})[value] = level
        return {name: levels[name] for name in self.names if name in levels}

    def combinations(self, skills: dict[str, list[str]]) -> list[tuple[str, ...]]:
        """Every queue combination an agent with these skills fits."""
        return list(itertools.product(*(skills[name] for name in self.names)))

    def all_combinations(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*(values for _, values in self.dimensions)))

    def combination_names(self) -> set[str]:
        """Every combination a caller may ask for, as the figures name it: a value of each
        dimension or `any` (`Spanish#F`, `Spanish#any`, `any#any`)."""
        choices = ([*values, "any"] for _, values in self.dimensions)
        return {"#".join(combination) for combination in itertools.product(*choices)}


# Only levels above 1 are stored (queues_app/steps.py: LEVEL_MIN, LEVEL_MAX).
Levels = dict[str, dict[str, int]]  # {"language": {"French": 5}}: levels above 1


def level_of(levels: Levels, dimension: str, value: str) -> int:
    return levels.get(dimension, {}).get(value, LEVEL_MIN)


def combination_levels(catalog: SkillCatalog, levels: Levels, combination: tuple[str, ...]) -> dict[str, int]:
    """An agent's level in each part of one queue combination, those above 1 (`lv` of the
    agent's message in that queue)."""
    found = {name: level_of(levels, name, value) for name, value in zip(catalog.names, combination, strict=True)}
    return {name: level for name, level in found.items() if level > LEVEL_MIN}


def meets(levels: dict[str, int], min_level: dict[str, int]) -> bool:
    """Whether levels of one combination (`combination_levels`) meet a routing step's minimums."""
    return all(levels.get(name, LEVEL_MIN) >= level for name, level in min_level.items())


def best_levels(skills: dict[str, list[str]], levels: Levels, preferences: dict[str, str | None]) -> dict[str, int]:
    """An agent's levels for a caller: in a dimension the caller named, their level in that
    value; in one left open, their best level among their values (the queue they would be
    found in)."""
    found = {}
    for name, values in skills.items():
        wanted = preferences.get(name)
        candidates = [wanted] if wanted is not None else values
        found[name] = max((level_of(levels, name, v) for v in candidates if v in values), default=LEVEL_MIN)
    return found


def describe_levels(skills: dict[str, list[str]], levels: Levels) -> str:
    """Skills in words with their levels above 1: "French 5, English, F"."""
    return ", ".join(
        f"{value} {levels[name][value]}" if value in levels.get(name, {}) else value
        for name, values in skills.items()
        for value in values
    )


ANY = None  # a preference that accepts every value of its dimension
_ANY_WORDS = {"", "any", "*", None}


def validate_preferences(catalog: SkillCatalog, preferences: dict) -> dict[str, str | None]:
    """A caller's preferences: at most one value per dimension, or any (None)."""
    clean: dict[str, str | None] = {}
    for name, allowed in catalog.dimensions:
        value = preferences.get(name)
        if isinstance(value, str):
            value = value.strip()
        if value in _ANY_WORDS or (isinstance(value, str) and value.lower() in _ANY_WORDS):
            clean[name] = ANY
        elif not isinstance(value, str):
            raise SkillError(name, f"{name} must be one value or 'any'")
        elif value not in allowed:
            raise SkillError(name, f"unknown {name} {value!r}; allowed: {', '.join(allowed)} or any")
        else:
            clean[name] = value
    extra = set(preferences) - set(catalog.names)
    if extra:
        field = sorted(extra)[0]
        raise SkillError(field, f"unknown skill dimension {field!r}")
    return clean


def fits(skills: dict[str, list[str]], preferences: dict[str, str | None]) -> bool:
    """Does an agent with `skills` satisfy every preference?"""
    return all(value is ANY or value in skills.get(name, ()) for name, value in preferences.items())


def matching_combinations(catalog: SkillCatalog, preferences: dict[str, str | None]) -> list[tuple[str, ...]]:
    """The queue combinations whose agents satisfy the preferences."""
    choices: list[tuple[str, ...]] = []
    for name, values in catalog.dimensions:
        wanted = preferences.get(name)
        choices.append(values if wanted is ANY else (str(wanted),))
    return list(itertools.product(*choices))


def describe_preferences(preferences: dict[str, str | None]) -> str:
    return ", ".join(f"{name}: {value or 'any'}" for name, value in preferences.items())
