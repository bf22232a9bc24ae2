"""What #9 dropped from ``wfbench.domain`` imports from its old place until 0.3.0, warning once.

Each deprecated name and each shim module (pinned in ``tests/domain_surface.py``, not read from the
package) gives exactly one ``DeprecationWarning`` that names its new home and the release that
removes it, attributed to the importing line; what it gives is the new home's own object; and none
of it is in ``__all__``. Deleting a shim or a table entry fails here. The imports are compiled from
strings so that the scan for deprecated imports in the sources (integration) does not find them.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterator

import pytest

import wfbench.domain
from tests.domain_surface import DEPRECATED_MODULES, DEPRECATED_NAMES, REMOVED_IN

IMPORTER = "acme_eval/importer.py"


def run_recording_warnings(code: str) -> tuple[dict[str, object], list[warnings.WarningMessage]]:
    """Run ``code`` as if from a file of another tool, with every warning recorded (none filtered)."""
    namespace: dict[str, object] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(code, IMPORTER, "exec"), namespace)  # noqa: S102 - the import under test
    return namespace, caught


def home_value(home: str, name: str) -> object:
    return getattr(importlib.import_module(home), name)


@pytest.fixture
def unimported_shims() -> Iterator[None]:
    """The shim modules as if never imported (a module warns once, on its first import), restored after."""
    saved = {module: sys.modules.pop(module) for module in DEPRECATED_MODULES if module in sys.modules}
    attributes = {
        name: vars(wfbench.domain).pop(name)
        for name in (module.rsplit(".", 1)[1] for module in DEPRECATED_MODULES)
        if name in vars(wfbench.domain)
    }
    yield
    for module in DEPRECATED_MODULES:
        sys.modules.pop(module, None)
        vars(wfbench.domain).pop(module.rsplit(".", 1)[1], None)
    sys.modules.update(saved)
    vars(wfbench.domain).update(attributes)


# --- deprecated names of the package ------------------------------------------------------------


@pytest.mark.parametrize(("name", "home"), sorted(DEPRECATED_NAMES.items()))
def test_a_deprecated_name_imports_from_the_package_with_one_warning_naming_its_new_home(
    name: str, home: str
) -> None:
    """``from wfbench.domain import step`` works, warns once (not twice) and gives the new home's object."""
    namespace, caught = run_recording_warnings(f"from wfbench.domain import {name} as value")

    assert [(warning.category, str(warning.message)) for warning in caught] == [
        (
            DeprecationWarning,
            f"wfbench.domain.{name} is deprecated and will be removed in {REMOVED_IN}; import it from {home}",
        )
    ]
    assert namespace["value"] is home_value(home, name)


@pytest.mark.parametrize(("name", "home"), sorted(DEPRECATED_NAMES.items()))
def test_a_deprecated_attribute_warns_on_every_use_and_is_never_kept_on_the_package(
    name: str, home: str
) -> None:
    """``wfbench.domain.step`` warns each time it is read: the package does not cache it in its namespace."""
    namespace, caught = run_recording_warnings(
        f"import wfbench.domain\nfirst = wfbench.domain.{name}\nsecond = wfbench.domain.{name}\n"
    )

    assert [warning.category for warning in caught] == [DeprecationWarning, DeprecationWarning]
    assert namespace["first"] is namespace["second"] is home_value(home, name)
    assert name not in vars(wfbench.domain)


def test_the_warning_points_at_the_line_that_imports_the_deprecated_name() -> None:
    """The importer's file and line, not wfbench's ``__getattr__`` nor importlib, so a user can find it."""
    _, caught = run_recording_warnings("import attrs\n\nfrom wfbench.domain import Breaker\n")

    assert [(warning.filename, warning.lineno) for warning in caught] == [(IMPORTER, 3)]


def test_a_deprecated_import_fails_where_warnings_are_errors() -> None:
    """A tool testing with ``-W error::DeprecationWarning`` finds its old imports."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(DeprecationWarning, match=r"import it from wfbench\.domain\.sweep\.scheduling"):
            exec(compile("from wfbench.domain import step", IMPORTER, "exec"), {})  # noqa: S102


def test_no_deprecated_name_is_public() -> None:
    """Not in ``__all__``, so not in a star import, and not offered by ``dir()``."""
    namespace: dict[str, object] = {}
    exec("from wfbench.domain import *", namespace)  # noqa: S102 - a fixed statement
    modules = {module.rsplit(".", 1)[1] for module in DEPRECATED_MODULES}

    assert set(DEPRECATED_NAMES) & set(wfbench.domain.__all__) == set()
    assert set(DEPRECATED_NAMES) & set(namespace) == set()
    assert set(DEPRECATED_NAMES) & set(dir(wfbench.domain)) == set()
    assert modules & set(wfbench.domain.__all__) == set()


def test_the_package_deprecates_exactly_the_pinned_names_in_their_pinned_homes() -> None:
    """Dropping a name from the deprecation table before its release (or adding one unnoticed) fails."""
    assert wfbench.domain._HOME_OF == DEPRECATED_NAMES
    assert wfbench.domain._REMOVED_IN == REMOVED_IN


def test_a_name_that_was_never_in_the_package_still_raises_attribute_error() -> None:
    """The deprecation table does not make the package answer every name."""
    _, caught = run_recording_warnings(
        "import wfbench.domain\ntry:\n    wfbench.domain.no_such_name\nexcept AttributeError:\n    pass\n"
        "else:\n    raise AssertionError('resolved')\n"
    )

    assert caught == []


# --- deprecated shim modules --------------------------------------------------------------------

_IMPORT_FORMS = {
    "import": "import {module} as value",
    "from the package": "from {package} import {leaf} as value",
    "a name from it": "from {module} import {name} as value",
}


@pytest.mark.usefixtures("unimported_shims")
@pytest.mark.parametrize("form", sorted(_IMPORT_FORMS))
@pytest.mark.parametrize("module", sorted(DEPRECATED_MODULES))
def test_a_deprecated_module_imports_with_one_warning_naming_its_new_home(module: str, form: str) -> None:
    """``import wfbench.domain.scheduling`` (or ``from wfbench.domain import scheduling``) warns once."""
    home, names = DEPRECATED_MODULES[module]
    package, leaf = module.rsplit(".", 1)
    code = _IMPORT_FORMS[form].format(module=module, package=package, leaf=leaf, name=min(names))

    namespace, caught = run_recording_warnings(code)

    assert [(warning.category, str(warning.message), warning.filename) for warning in caught] == [
        (
            DeprecationWarning,
            f"{module} is deprecated and will be removed in {REMOVED_IN}; import from {home}",
            IMPORTER,
        )
    ]
    expected = home_value(home, min(names)) if form == "a name from it" else sys.modules[module]
    assert namespace["value"] is expected


@pytest.mark.usefixtures("unimported_shims")
@pytest.mark.parametrize("module", sorted(DEPRECATED_MODULES))
def test_a_deprecated_module_holds_every_public_name_it_had_as_its_new_home_s_object(module: str) -> None:
    """Each name the old module defined is the new module's very object; ``__all__`` is those names."""
    home, names = DEPRECATED_MODULES[module]
    namespace, _ = run_recording_warnings(f"import {module} as shim")
    shim = namespace["shim"]

    assert sorted(shim.__all__) == sorted(names)  # type: ignore[attr-defined]
    assert [name for name in sorted(names) if getattr(shim, name) is not home_value(home, name)] == []
