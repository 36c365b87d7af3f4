"""Simulator configuration: cache and TLB geometry, where each value came from, and its checks.

Defaults come from the machine: caches from /sys/devices/system/cpu/cpu0/cache, TLBs from
CPUID (csrc/sim/cpuid.c), and the named PL_SIM_DEFAULT_* values of csrc/sim/pl_sim.h where
the machine does not say (origin "assumed"). Every geometry carries an ``origin`` that says which.
"""

from dataclasses import dataclass, fields, replace

from .._native import ffi, lib
from ..core.errors import BadInput
from ..core.numbers import format_size, parse_int, parse_size
from ..machine import caches as _caches
from ..machine import cpuid as _cpuid

LEVEL_KEYS = ("l1", "l2", "llc")
LEVEL_NAMES = {"l1": "L1D", "l2": "L2", "llc": "LLC"}
TLB_KEYS = ("dtlb", "stlb")
TLB_NAMES = {"dtlb": "DTLB", "stlb": "STLB"}
POLICIES = {
    "lru": lib.PL_POLICY_LRU,
    "fifo": lib.PL_POLICY_FIFO,
    "random": lib.PL_POLICY_RANDOM,
    "plru": lib.PL_POLICY_PLRU,
}
PAGE_SIZES = {"4k": lib.PL_SIM_PAGE_4K, "2m": lib.PL_HUGE_PAGE}  # what the TLB model takes
# The origin of a geometry the machine does not report: a stated guess, never passed off as
# the machine's own.
ASSUMED = "assumed"


@dataclass(frozen=True)
class CacheGeometry:
    """One cache level: size and line in bytes, ways per set."""

    size: int
    ways: int
    line: int
    origin: str = "option"

    @property
    def sets(self):
        return self.size // (self.ways * self.line)

    def describe(self):
        assoc = "fully associative" if self.sets == 1 else f"{self.ways}-way"
        return f"{format_size(self.size)}, {assoc}, {self.line} B lines ({self.sets} sets)"

    def to_dict(self):
        return {
            "size": self.size,
            "ways": self.ways,
            "line": self.line,
            "sets": self.sets,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class TLBGeometry:
    """One TLB: entries in all, ways per set (== entries: fully associative)."""

    entries: int
    ways: int
    origin: str = "option"

    @property
    def sets(self):
        return self.entries // self.ways

    def describe(self):
        if self.sets == 1:
            return f"{self.entries} entries, fully associative"
        return f"{self.entries} entries, {self.ways}-way ({self.sets} sets)"

    def to_dict(self):
        return {
            "entries": self.entries,
            "ways": self.ways,
            "sets": self.sets,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class SimConfig:
    """The whole simulated hierarchy. A level set to None is absent."""

    l1: CacheGeometry | None = None
    l2: CacheGeometry | None = None
    llc: CacheGeometry | None = None
    dtlb: TLBGeometry | None = None
    stlb: TLBGeometry | None = None
    page: int = 4096
    policy: str = "lru"
    seed: int = 0
    classify: bool | str = True  # True: every level; "l1": the first level only; False: none

    @property
    def levels(self):
        """[(name, CacheGeometry)] of the present cache levels, first level first."""
        return [(LEVEL_NAMES[k], getattr(self, k)) for k in LEVEL_KEYS if getattr(self, k)]

    @property
    def tlbs(self):
        return [(TLB_NAMES[k], getattr(self, k)) for k in TLB_KEYS if getattr(self, k)]

    def to_dict(self):
        """Everything, as JSON (and as a worker request: from_dict gives it back whole)."""
        return {
            "levels": {name: g.to_dict() for name, g in self.levels},
            "tlbs": {name: g.to_dict() for name, g in self.tlbs},
            "page": self.page,
            "policy": self.policy,
            "seed": self.seed,
            "classify": self.classify,
            "inclusion": "non-inclusive",
            "write": "write-allocate",
        }

    @classmethod
    def from_dict(cls, d):
        """The SimConfig whose to_dict() is ``d``, origins included (no machine is read)."""
        keys = {**{v: k for k, v in LEVEL_NAMES.items()}, **{v: k for k, v in TLB_NAMES.items()}}
        parts = {
            keys[n]: CacheGeometry(g["size"], g["ways"], g["line"], g["origin"])
            for n, g in d["levels"].items()
        }
        parts |= {
            keys[n]: TLBGeometry(g["entries"], g["ways"], g["origin"]) for n, g in d["tlbs"].items()
        }
        return cls(
            **parts, page=d["page"], policy=d["policy"], seed=d["seed"], classify=d["classify"]
        )

    def check(self):
        """Raise BadInput, with one line saying what is impossible, unless the C model can run
        this configuration. Python reads what it was given (whole numbers, names); the limits
        of the model are checked once, in C (pl_sim_config_check), which words the reason."""
        if self.policy not in POLICIES:
            raise BadInput(f"unknown policy {self.policy!r}: use one of {', '.join(POLICIES)}")
        if self.page not in PAGE_SIZES.values():
            raise BadInput(f"page size {self.page} is not 4k or 2m")
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed < 1 << 64
        ):
            raise BadInput(f"seed {self.seed!r} is not a whole number in [0, 2**64)")
        if not (isinstance(self.classify, bool) or self.classify == "l1"):
            raise BadInput(f'classify must be true, false or "l1", not {self.classify!r}')
        if self.stlb and not self.dtlb:
            raise BadInput("an STLB needs a DTLB in front of it (set --tlb too)")
        for name, g in self.levels:
            _whole(name, "size", g.size, 64)
            _whole(name, "ways", g.ways, 32)
            _whole(name, "line size", g.line, 32)
        for name, g in self.tlbs:
            _whole(name, "entries", g.entries, 32)
            _whole(name, "ways", g.ways, 32)
        why = ffi.new("char[]", 256)
        if lib.pl_sim_config_check(to_native(self), why, len(why)):
            raise BadInput(ffi.string(why).decode())
        return self


def _whole(name, what, value, bits):
    """A field the C struct can hold: a whole number from 1 below 2**bits."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 1 << bits:
        raise BadInput(f"{name}: {what} must be a whole number >= 1, not {value!r}")


# --- defaults from the machine ----------------------------------------------------------------


def _sysfs_levels(root):
    """{"l1": CacheGeometry, ...} of the levels the machine reports (machine.caches): the
    level-1 data cache, level 2, and the last level from 3 on, from one reading of the tree."""
    data = _caches.data_caches(root)
    first = {c.level: c for c in reversed(data)}  # the first cache the machine lists per level
    top = [c for c in data if c.level >= 3]
    found = {"l1": first.get(1), "l2": first.get(2), "llc": top[-1] if top else None}
    origin = _caches.source(root)
    levels = {}
    for key, c in found.items():
        if c is None or not c.line or c.ways is None or c.size % c.line:
            continue
        lines = c.size // c.line
        ways = min(c.ways, lines) or lines  # sysfs says 0 ways for a fully associative cache
        if lines % ways:
            continue  # no whole number of sets: not a geometry the model can take
        levels[key] = CacheGeometry(c.size, ways, c.line, origin)
    return levels


def assumed_levels():
    """The named defaults of pl_sim.h, for levels the machine does not report."""
    line, d = lib.PL_CACHE_LINE, ASSUMED
    return {
        "l1": CacheGeometry(lib.PL_SIM_DEFAULT_L1_SIZE, lib.PL_SIM_DEFAULT_L1_WAYS, line, d),
        "l2": CacheGeometry(lib.PL_SIM_DEFAULT_L2_SIZE, lib.PL_SIM_DEFAULT_L2_WAYS, line, d),
        "llc": CacheGeometry(lib.PL_SIM_DEFAULT_LLC_SIZE, lib.PL_SIM_DEFAULT_LLC_WAYS, line, d),
    }


def cpuid_tlbs(page=4096, root="/"):
    """{"dtlb": TLBGeometry, "stlb": TLBGeometry} as far as the machine's CPUID reports them."""
    found = {}
    for key, (entries, ways, leaf) in _cpuid.tlbs(page, root).items():
        if entries and entries % ways == 0:  # else no whole number of sets: the default
            found[key] = TLBGeometry(entries, ways, f"cpuid {leaf:#x}")
    return found


def _default_tlbs(page):
    if page == PAGE_SIZES["2m"]:
        dtlb = (lib.PL_SIM_DEFAULT_DTLB_2M_ENTRIES, lib.PL_SIM_DEFAULT_DTLB_2M_WAYS)
    else:
        dtlb = (lib.PL_SIM_DEFAULT_DTLB_ENTRIES, lib.PL_SIM_DEFAULT_DTLB_WAYS)
    return {
        "dtlb": TLBGeometry(*dtlb, ASSUMED),
        "stlb": TLBGeometry(lib.PL_SIM_DEFAULT_STLB_ENTRIES, lib.PL_SIM_DEFAULT_STLB_WAYS, ASSUMED),
    }


def default_config(root="/", page="4k"):
    """This machine's hierarchy: caches from sysfs (pagelab.machine.caches), TLBs from CPUID.

    What the machine does not report is assumed, and says so (origin "assumed"): the L1D and L2
    take the named defaults of pl_sim.h; the LLC does too when sysfs reports no cache at all
    (a container that hides them), but a machine that reports caches without a level 3 (arm64
    servers) has none, and the model has none.
    """
    page = parse_page(page)
    levels = _sysfs_levels(root)
    assumed = assumed_levels()
    if not levels:
        levels = assumed
    for key in ("l1", "l2"):
        levels.setdefault(key, assumed[key])
    tlbs = {**_default_tlbs(page), **cpuid_tlbs(page, root)}
    return SimConfig(
        l1=levels["l1"],
        l2=levels["l2"],
        llc=levels.get("llc"),
        dtlb=tlbs["dtlb"],
        stlb=tlbs["stlb"],
        page=page,
    )


# --- parsing user specs -----------------------------------------------------------------------


def parse_page(value):
    """'4k' / '2m' (or 4096 / 2097152) -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value in PAGE_SIZES.values():
        return value
    key = str(value).strip().lower().removesuffix("b").removesuffix("i")
    if key not in PAGE_SIZES:
        raise BadInput(f"page size {value!r} is not 4k or 2m")
    return PAGE_SIZES[key]


def parse_cache(value, name="cache"):
    """'32K:8:64', (size, ways, line), a dict or a CacheGeometry -> CacheGeometry; 'none' and
    None -> None (the level is absent)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, CacheGeometry):
        return value
    if isinstance(value, dict):
        unknown = set(value) - {"size", "ways", "line"}
        if unknown or len(value) != 3:
            raise BadInput(f"{name}: give size, ways and line, not {sorted(value)}")
        value = (value["size"], value["ways"], value["line"])
    parts = value.split(":") if isinstance(value, str) else value
    if not isinstance(parts, (tuple, list)) or len(parts) != 3:
        raise BadInput(f"{name}: {value!r} is not SIZE:WAYS:LINE, e.g. 32K:8:64")
    value = parts
    size, ways, line = value
    return CacheGeometry(
        parse_size(size, f"{name} size"),
        parse_int(ways, f"{name} ways"),
        parse_size(line, f"{name} line size"),
    )


def parse_tlb(value, name="TLB"):
    """'64:4', (entries, ways), a dict or a TLBGeometry -> TLBGeometry; 'none'/None -> None."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    if isinstance(value, TLBGeometry):
        return value
    if isinstance(value, dict):
        if set(value) != {"entries", "ways"}:
            raise BadInput(f"{name}: give entries and ways, not {sorted(value)}")
        value = (value["entries"], value["ways"])
    parts = value.split(":") if isinstance(value, str) else value
    if not isinstance(parts, (tuple, list)) or len(parts) != 2:
        raise BadInput(f"{name}: {value!r} is not ENTRIES:WAYS, e.g. 64:4")
    value = parts
    return TLBGeometry(parse_int(value[0], f"{name} entries"), parse_int(value[1], f"{name} ways"))


_KEYS = {f.name for f in fields(SimConfig)}
_ALIASES = {"tlb": "dtlb"}


def make_config(spec=None, root="/"):
    """A checked SimConfig from None (this machine), a SimConfig, or a dict of overrides of
    this machine's defaults with the keys of SimConfig (values as on the command line, e.g.
    {"l1": "32K:8:64", "l2": None, "llc": None, "stlb": None, "policy": "fifo"})."""
    if spec is None:
        return default_config(root).check()
    if isinstance(spec, SimConfig):
        return spec.check()
    if not isinstance(spec, dict):
        raise BadInput(f"a simulator config is a dict or a SimConfig, not {type(spec).__name__}")
    spec = {_ALIASES.get(k, k): v for k, v in spec.items()}
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise BadInput(f"unknown config key {unknown[0]!r}: use {', '.join(sorted(_KEYS))}")
    page = parse_page(spec.get("page", "4k"))
    changes = {"page": page}
    for key in LEVEL_KEYS:
        if key in spec:
            changes[key] = parse_cache(spec[key], LEVEL_NAMES[key])
    for key in TLB_KEYS:
        if key in spec:
            changes[key] = parse_tlb(spec[key], TLB_NAMES[key])
    if "policy" in spec:
        changes["policy"] = str(spec["policy"]).strip().lower()
    if "seed" in spec:
        changes["seed"] = parse_int(spec["seed"], "seed")
    if "classify" in spec:
        changes["classify"] = spec["classify"]
    return replace(default_config(root, page), **changes).check()


def to_native(cfg):
    """The struct pl_sim_config for a SimConfig whose fields are whole numbers (check())."""
    c = ffi.new("struct pl_sim_config *")
    c.nlevels = len(cfg.levels)
    for i, (name, g) in enumerate(cfg.levels):
        c.level[i].size, c.level[i].ways, c.level[i].line = g.size, g.ways, g.line
        c.level[i].name = name.encode()
    c.ntlbs = len(cfg.tlbs)
    for i, (name, g) in enumerate(cfg.tlbs):
        c.tlb[i].entries, c.tlb[i].ways = g.entries, g.ways
        c.tlb[i].name = name.encode()
    c.page_size = cfg.page
    c.policy = POLICIES[cfg.policy]
    c.seed = cfg.seed
    # a bit per level: True classifies every level, "l1" only the first
    c.classify = {True: (1 << lib.PL_SIM_MAX_LEVELS) - 1, "l1": 1, False: 0}[cfg.classify]
    return c
