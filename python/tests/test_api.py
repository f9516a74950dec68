"""The package's surface: every public name documented and typed, help() readable, imports
that load no library."""

import inspect
import pydoc
import subprocess
import sys

import ldpb


def public_members(obj):
    for name, member in inspect.getmembers(obj):
        if name.startswith("_"):
            continue
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def test_every_public_name_has_a_docstring():
    missing = []
    for name in ldpb.__all__:
        obj = getattr(ldpb, name)
        if isinstance(obj, (int, float, str, tuple)):
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, tuple):
            for mname, member in public_members(obj):
                if not inspect.getdoc(member):
                    missing.append(f"{name}.{mname}")
    assert not missing, f"undocumented: {missing}"


def test_public_functions_are_typed():
    untyped = []
    for name in ldpb.__all__:
        obj = getattr(ldpb, name)
        funcs = [(name, obj)] if inspect.isfunction(obj) else []
        if inspect.isclass(obj) and not issubclass(obj, (tuple, BaseException)):
            funcs += [(f"{name}.{m}", f) for m, f in public_members(obj)
                      if inspect.isfunction(f)]
        for fname, f in funcs:
            sig = inspect.signature(f)
            if sig.return_annotation is inspect.Signature.empty:
                untyped.append(fname)
    assert not untyped, f"no return annotation: {untyped}"


def test_help_renders():
    text = pydoc.render_doc(ldpb, renderer=pydoc.plaintext)
    for word in ("privatize", "Policy", "simulate", "Client", "LDPB_LIBRARY_PATH"):
        assert word in text
    assert "choose(self) -> 'int'" in pydoc.render_doc(ldpb.Policy, renderer=pydoc.plaintext)


def test_import_loads_nothing():
    code = ("import ldpb, ldpb._lib as l; assert l._libs == {}, l._libs; "
            "help(ldpb.privatize)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": ":".join(sys.path), "LDPB_LIBRARY_PATH": "/nonexistent"})
    assert p.returncode == 0, p.stderr
