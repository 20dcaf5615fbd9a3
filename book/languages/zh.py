"""Chinese (简体中文): the edition in the site's zh/ folder, translated in book/zh/."""

SPHINX = {"language": "zh_CN", "nb_code_prompt_show": "显示代码",
          "nb_code_prompt_hide": "隐藏代码"}
FIGURE = "图"
WORDS = {
    "notebook": "下载本章的 Jupyter 笔记本（{name}）",
    "project": "，或下载{link}整个项目（{zip}，{mb:.1f} MB）</a>，离线运行",
    "minutes": "阅读约需 {low:.0f} 到 {high:.0f} 分钟（{counts}）。",
    "figure": "第 {label} 章的图",
    "reference": "参考",
    "solutions": "解答",
    "show_solution": "显示解答",
    "solutions_mark": "**解答。**",
    "solutions_page": "**解答。** 本章每道练习的详细解答在[解答]({page})一页，每道都折叠着，点开才显示。",
    "total": ("细心的初读者读完全部 {n} 章约需 {low:.0f} 到 {high:.0f} 小时：每分钟读 "
              "{hanzi[0]:g} 到 {hanzi[1]:g} 个汉字的正文、{code[0]:g} 到 {code[1]:g} 行代码或 "
              "{printed[0]:g} 到 {printed[1]:g} 行打印输出，每幅图 {figure[0]:g} 到 {figure[1]:g} "
              "分钟。每章标题下给出该章的估计；做练习所需的时间另计。"),
}


def counts(words: int, code: int, printed: int, figures: int) -> str:
    return f"{words:,} 字，{code:,} 行代码，{printed:,} 行输出，{figures} 幅图"


def sphinx_setup(app) -> None:
    """Sphinx's Chinese search: version 9.0 stems the Latin words of a page with the English
    stemmer, whose script it ships, but names the stemmer after the language (ChineseStemmer,
    which no script defines: every page then logs a script error), so it is made to name the
    one it ships; jieba, which splits the index into words, has its start-up chatter muted."""
    import logging

    from sphinx.search import zh
    if zh.SearchChinese.js_stemmer_rawcode == "english-stemmer.js":
        zh.SearchChinese.language_name = "English"
    try:
        import jieba
    except ImportError:                   # Sphinx's Chinese search then works without it
        return
    jieba.setLogLevel(logging.WARNING)
