"""Simulations: the presets and custom instances of ``ldpb sim``, run by the C engine.

:func:`simulate` takes the options of ``ldpb sim`` as keyword arguments and returns a
:class:`SimResult` with the regret curves as numpy arrays. It calls libldpb-sim, the library
``ldpb sim`` itself calls, so the same options and seed give the same numbers as the command's
``regret.csv`` (whatever the number of threads). Every simulation is seeded (default seed "1",
as the command): its noise is simulated, never a secret.
"""

from __future__ import annotations

import csv
import ctypes
import io
import math
import numbers
from ctypes import POINTER, byref, c_char_p, c_uint64, c_void_p
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _check, _lib
from .errors import raise_for

_OPTIONS = ("preset", "means", "laws", "algorithms", "mechanisms", "epsilons", "k", "horizon",
            "trials", "kappa", "gamma", "eps_arm", "tau", "threshold", "gaps")


def presets() -> List[str]:
    """The preset names ``ldpb sim --preset`` accepts; :func:`simulate` runs those for which
    :func:`preset_runnable` is True (the others have runners of their own in the command)."""
    lib = _lib.sim()
    out, i = [], 0
    while True:
        n = lib.ldpb_sim_preset_name(i)
        if n is None:
            return out
        out.append(n.decode())
        i += 1


def preset_runnable(name: str) -> bool:
    """True if :func:`simulate` can run the preset ``name``."""
    return bool(_lib.sim().ldpb_sim_preset_runnable(_check.text(name, "preset")))


def _number_text(v: Any, what: str) -> str:
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{what}: expected a number, not a bool")
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isinf(f) and f > 0:
            return "inf"
        if not math.isfinite(f):
            raise _check.InvalidArgument(f"{what}: {f} is not a finite number")
        return repr(f)
    if isinstance(v, str):
        return v
    raise TypeError(f"{what}: expected a number or str, not {type(v).__name__}")


def _option_text(name: str, value: Any) -> str:
    """The command-line text of an option value: lists are comma-separated, floats written so
    they read back exactly."""
    if isinstance(value, str):
        _check.text(value, name)
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) == 0:
            raise _check.InvalidArgument(f"{name}: empty list")
        return ",".join(_number_text(v, name) if not isinstance(v, str) else v for v in value)
    return _number_text(value, name)


class SimConfig(NamedTuple):
    """One configuration of a run: one row group of ``regret.csv``."""
    preset: str
    algorithm: str
    mechanism: str
    epsilon: str
    epsilon_value: float
    k: int
    model: str
    title: str


class SimResult:
    """The results of :func:`simulate`.

    Attributes:
        t: uint64 array of the checkpoints (the ``t`` column of regret.csv).
        configs: one :class:`SimConfig` per configuration.
        regret: float64 array (configs, trials, checkpoints): every trial's cumulative
            pseudo-regret.
        mean, ci_low, ci_high: float64 arrays (configs, checkpoints): the mean across trials
            and its Student-t 95% interval (regret.csv's mean_regret, ci95_low, ci95_high).
        trials, horizon: as run; seconds: the engine's wall time; options: the options given.
    """

    def __init__(self, t: np.ndarray, configs: List[SimConfig], regret: np.ndarray,
                 mean: np.ndarray, ci_low: np.ndarray, ci_high: np.ndarray, trials: int,
                 horizon: int, seconds: float, options: Dict[str, str]) -> None:
        self.t = t
        self.configs = configs
        self.regret = regret
        self.mean = mean
        self.ci_low = ci_low
        self.ci_high = ci_high
        self.trials = trials
        self.horizon = horizon
        self.seconds = seconds
        self.options = options

    def __repr__(self) -> str:
        return (f"SimResult({len(self.configs)} configurations x {self.trials} trials, "
                f"T={self.horizon}, {len(self.t)} checkpoints)")

    def label(self, c: int) -> str:
        """A short label of configuration ``c``: "ldp-ts-b/linear eps=1 K=20"."""
        cf = self.configs[c]
        mech = "" if cf.mechanism == "none" else "/" + cf.mechanism
        eps = "" if cf.epsilon == "inf" else f" eps={cf.epsilon}"
        return f"{cf.algorithm}{mech}{eps} K={cf.k}"

    def final(self) -> np.ndarray:
        """The mean regret at the horizon per configuration."""
        return self.mean[:, -1].copy()

    def to_dataframe(self) -> Any:
        """regret.csv as a pandas DataFrame (one row per configuration and checkpoint, with
        the columns preset, algorithm, mechanism, epsilon, k, t, mean_regret, ci95_low,
        ci95_high, trials). Needs pandas (ImportError otherwise)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("SimResult.to_dataframe needs pandas (Debian: python3-pandas); "
                              "the arrays are in .t, .mean, .ci_low, .ci_high") from e
        rows: Dict[str, list] = {k: [] for k in ("preset", "algorithm", "mechanism", "epsilon",
                                                 "k", "t", "mean_regret", "ci95_low",
                                                 "ci95_high", "trials")}
        n = len(self.t)
        for c, cf in enumerate(self.configs):
            rows["preset"] += [cf.preset] * n
            rows["algorithm"] += [cf.algorithm] * n
            rows["mechanism"] += [cf.mechanism] * n
            rows["epsilon"] += [cf.epsilon] * n
            rows["k"] += [cf.k] * n
            rows["t"] += list(self.t)
            rows["mean_regret"] += list(self.mean[c])
            rows["ci95_low"] += list(self.ci_low[c])
            rows["ci95_high"] += list(self.ci_high[c])
            rows["trials"] += [self.trials] * n
        return pd.DataFrame(rows)

    def plot(self, ax: Any = None, configs: Optional[Sequence[int]] = None,
             band: bool = True) -> Any:
        """Plots mean regret against t on log-log axes, one line per configuration, with the
        95% band, into ``ax`` (default: a new figure). Needs matplotlib (ImportError
        otherwise). Returns the Axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("SimResult.plot needs matplotlib (Debian: python3-matplotlib)") \
                from e
        if ax is None:
            _, ax = plt.subplots()
        for c in (range(len(self.configs)) if configs is None else configs):
            # Log axes: points of zero regret (early rounds of some policies) are left out,
            # and the band is drawn where its low end is positive.
            pos = self.mean[c] > 0
            line, = ax.plot(self.t[pos], self.mean[c][pos], label=self.label(c))
            if band and self.trials > 1:
                ok = pos & (self.ci_low[c] > 0)
                ax.fill_between(self.t[ok], self.ci_low[c][ok], self.ci_high[c][ok],
                                alpha=0.2, color=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_ylabel("cumulative pseudo-regret")
        ax.set_title(self.configs[0].title if self.configs else "")
        ax.legend()
        return ax


class SimTable:
    """The result of a preset whose output is a table, not regret curves (sajed2019-nas): the
    CSV file ``ldpb sim`` writes for the same options and seed, byte for byte, and its columns.

    Attributes:
        name: the file's name ("stopping.csv").
        csv: its text.
        header: the column names, in order.
        columns: each column as a numpy array (float64 where every value is a number, else
            str); ``table["mean_samples"]`` is ``table.columns["mean_samples"]``.
        seconds: wall time of the run; options: the option texts it ran with.
    """

    def __init__(self, name: str, text: str, seconds: float, options: Dict[str, str]) -> None:
        self.name = name
        self.csv = text
        self.seconds = seconds
        self.options = options
        rows = list(csv.reader(io.StringIO(text)))
        self.header: List[str] = rows[0] if rows else []
        self.columns: Dict[str, np.ndarray] = {}
        for j, h in enumerate(self.header):
            vals = [r[j] for r in rows[1:]]
            try:
                self.columns[h] = np.array([float(v) for v in vals], dtype=np.float64)
            except ValueError:
                self.columns[h] = np.array(vals, dtype=str)

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    def __len__(self) -> int:
        return len(self.columns[self.header[0]]) if self.header else 0

    def __repr__(self) -> str:
        return f"SimTable({self.name!r}, {len(self)} rows, columns {self.header})"

    def to_dataframe(self) -> Any:
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("SimTable.to_dataframe() needs pandas (python3-pandas)") from e
        return pd.read_csv(io.StringIO(self.csv))


def simulate(preset: Optional[str] = None, *, seed: str = "1", threads: Optional[int] = None,
             progress: Optional[Callable[[float], None]] = None,
             **options: Any) -> Union[SimResult, SimTable]:
    """Runs a preset or a custom instance of ``ldpb sim`` and returns its regret curves.

    Args:
        preset: a preset name (see :func:`presets`), or None for a custom instance given by
            ``means`` or ``laws`` and ``algorithms``.
        seed: the simulation's seed text (default "1", as the command).
        threads: worker threads (default: the online CPUs); the results do not depend on it.
        progress: called now and then with the share of the work done, in [0, 1].
        **options: the other options of ``ldpb sim`` by their names, ``-`` written ``_``:
            means, laws, algorithms, mechanisms, epsilons, k, horizon, trials, kappa, gamma,
            eps_arm, tau, threshold, gaps (sajed2019-nas). Lists may be Python sequences
            (``epsilons=[0.5, 1]``) or the command's comma-separated texts.

    Raises:
        InvalidArgument / OutOfRange: options the command refuses (its own message);
        NotSupported: the smith2013-* presets, which only ``ldpb sim`` runs.

    shariff2018 gives a :class:`SimResult` like the others (options horizon, trials,
    algorithms, epsilons; mechanism "none", k the actions per round). sajed2019-nas (options
    trials, algorithms, epsilons, gaps) gives a :class:`SimTable`: its stopping.csv.

    >>> r = ldpb.simulate("sajed2019-c1", trials=4, horizon=10**5)   # doctest: +SKIP
    >>> r.mean.shape, r.t[-1]                                        # doctest: +SKIP
    """
    texts: Dict[str, str] = {}
    if preset is not None:
        texts["preset"] = _option_text("preset", preset)
    for key, value in options.items():
        if key not in _OPTIONS or key == "preset":
            raise TypeError(f"simulate() got an unknown option {key!r} (expected one of "
                            f"{', '.join(o for o in _OPTIONS if o != 'preset')})")
        if value is not None:
            texts[key.replace("_", "-")] = _option_text(key, value)
    texts["seed"] = _check.text(seed, "seed").decode()
    if threads is not None:
        texts["threads"] = str(_check.count(threads, "threads", 1, 1024))
    lib = _lib.sim()
    h = c_void_p()
    raise_for(lib.ldpb_sim_new(byref(h)), "simulate")
    try:
        for k, v in texts.items():
            raise_for(lib.ldpb_sim_set(h, k.encode(), v.encode()), f"simulate({k})",
                      lib.ldpb_sim_errmsg(h).decode(errors="replace"))
        cb = None
        if progress is not None:
            def _cb(_ctx: Any, p: Any) -> None:
                try:
                    progress(float(p.contents.work_done))
                except Exception:  # an exception must not cross the C frames
                    pass
            cb = _lib.SIM_PROGRESS_FN(_cb)
            lib.ldpb_sim_set_progress(h, cb, None)
        err = lib.ldpb_sim_run(h)
        raise_for(err, "simulate", lib.ldpb_sim_errmsg(h).decode(errors="replace"))
        name = c_char_p()
        table = lib.ldpb_sim_table(h, byref(name))
        if table is not None:
            return SimTable(name.value.decode(), table.decode(), float(lib.ldpb_sim_seconds(h)),
                            dict(texts))
        return _collect(lib, h, texts)
    finally:
        lib.ldpb_sim_free(h)


def _collect(lib: Any, h: c_void_p, texts: Dict[str, str]) -> SimResult:
    tp = POINTER(c_uint64)()
    n = lib.ldpb_sim_checkpoints(h, byref(tp))
    t = np.ctypeslib.as_array(tp, shape=(n,)).copy()
    n_cfg = lib.ldpb_sim_n_configs(h)
    trials = int(lib.ldpb_sim_trials(h))
    configs: List[SimConfig] = []
    regret = np.empty((n_cfg, trials, n))
    mean = np.empty((n_cfg, n))
    lo = np.empty((n_cfg, n))
    hi = np.empty((n_cfg, n))
    for c in range(n_cfg):
        info = _lib.SimConfigInfoC()
        raise_for(lib.ldpb_sim_config(h, c, byref(info)), "simulate")
        configs.append(SimConfig(info.preset.decode(), info.algorithm.decode(),
                                 info.mechanism.decode(), info.epsilon.decode(),
                                 info.epsilon_value, int(info.k), info.model.decode(),
                                 info.title.decode()))
        r = lib.ldpb_sim_regret(h, c)
        regret[c] = np.ctypeslib.as_array(r, shape=(trials * n,)).reshape(trials, n)
        m, l_, u = (ctypes.POINTER(ctypes.c_double)() for _ in range(3))
        raise_for(lib.ldpb_sim_curve(h, c, byref(m), byref(l_), byref(u)), "simulate")
        mean[c] = np.ctypeslib.as_array(m, shape=(n,))
        lo[c] = np.ctypeslib.as_array(l_, shape=(n,))
        hi[c] = np.ctypeslib.as_array(u, shape=(n,))
    return SimResult(t, configs, regret, mean, lo, hi, trials, int(lib.ldpb_sim_horizon(h)),
                     float(lib.ldpb_sim_seconds(h)), dict(texts))
