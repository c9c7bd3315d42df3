"""docs/zh_CN/findings.md, the findings catalogue in Simplified Chinese, generated from the rules' catalogue
and the zh_CN translations: `python -m tools.findings_doc docs/zh_CN/findings.md`."""

from __future__ import annotations

import sys

HEADER = """\
# 检查结论目录（Findings catalogue）

由 `python -m tools.findings_doc docs/zh_CN/findings.md` 根据规则和 zh_CN 翻译生成；
文件过期时会有测试失败。英文原版见 [docs/findings.md](../findings.md)，术语见 [glossary.md](glossary.md)。
每条结论都有固定的代码和名称，脚本和 CI 可以依赖它们。`cudadoctor explain 代码` 会打印其中一页。
这里显示的严重程度是通常的级别；少数规则会针对具体机器调高或调低，报告里显示的总是实际使用的级别。
"""


def render(language: str = "zh_CN") -> str:
    from cudadoctor.locale import _, use
    from tools import catalogue

    with use(language):
        return catalogue.render(HEADER, _, ("代码", "名称", "严重程度", "摘要"), "。")


def main() -> None:
    from tools import catalogue

    catalogue.write(render(), sys.argv)


if __name__ == "__main__":
    main()
