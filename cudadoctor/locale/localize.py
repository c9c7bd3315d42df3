"""Moved to cudadoctor/render/localize.py: findings are translated where they are shown (render), which
looks them up in the rules' catalogue; the locale layer below the rules only holds gettext and templates.
This alias keeps old imports working until tools/rewrite_model_imports.py has rewritten them."""

from cudadoctor.render.localize import SEPARATOR, column, finding, findings, label, title, why  # noqa: F401
