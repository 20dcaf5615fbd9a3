"""Chinese (简体中文): the edition in the site's zh/ folder, translated in book/zh/."""
import re

SPHINX = {"language": "zh_CN", "nb_code_prompt_show": "显示{type}",
          "nb_code_prompt_hide": "隐藏{type}"}
# What a folded part of a code cell is: myst-nb fills the prompts' {type} with these English words.
FOLDED = {"source": "代码", "output": "输出", "outputs": "输出", "content": "单元格"}
NAME, READ_IN = "中文", "阅读本页的中文版"
FIGURE = "图"
WORDS = {
    "notebook": "下载本章的 Jupyter 笔记本（{name}）",
    "project": "，或下载{link}整个项目（{zip}，{mb:.1f} MB）</a>，离线运行",
    "minutes": "阅读约需 {low:.0f} 到 {high:.0f} 分钟（{counts}）。",
    "figure": "第 {label} 章的图",
    "source": "（高亮显示的源代码）",
    "api_title": "API 参考中的 {module}",
    "reference": "参考",
    "solutions": "解答",
    "show_solution": "显示解答",
    "solutions_mark": "**解答。**",
    "solutions_page": "**解答。** 本章每道练习的详细解答在[解答]({page})一页，每道都折叠着，点开才显示。",
    "total": ("细心的初读者读完全部 {n} 章约需 {low:.0f} 到 {high:.0f} 小时：每分钟读 "
              "{hanzi[0]:g} 到 {hanzi[1]:g} 个汉字或 {words[0]:g} 到 {words[1]:g} 个英文词的正文、{code[0]:g} 到 {code[1]:g} 行代码或 "
              "{printed[0]:g} 到 {printed[1]:g} 行打印输出，每幅图 {figure[0]:g} 到 {figure[1]:g} "
              "分钟。每章标题下给出该章的估计；做练习所需的时间另计。"),
}


SCRIPTS = {
    "close": "点击任意处或按 Esc 关闭。",
    "open": "查看原尺寸的图",
    "missing": "缺少权重数据：本页需要文件 _static/explorer-data.js，它由本书的构建写出。",
    "encoder": "编码器自注意力",
    "decoder": "解码器自注意力（带掩码）",
    "cross": "编码器-解码器注意力",
    "head": "头 {h}",
    "of": "{i} / {n}",
    "all_heads": "该层所有头",
    "which_all": "全部 {heads} 个头",
    "which_one": "第 {head} 个头（共 {heads} 个）",
    "axis_encoder": "英文片段",
    "axis_decoder": "解码器位置（译文，前面加一个起始词元）",
    "axis_decoder_keys": "同样的位置",
    "axis_cross": "正在写出的德文片段",
    "caption": ("{name}，第 {layer} 层（共 {layers} 层），{which}。行：{rows}；列：{keys}。"
                "把鼠标停在某一行上，或让它的标签获得焦点，即可列出它最大的几个权重。"),
    "table": "{name}，第 {layer} 层，头 {head}：每行一个查询，每列一个键；短横线表示被掩码的键（权重为 0）。",
    "corner": "查询 \\ 键",
    "row": "第 {i} 行，“{token}”",
    "predicts": "（这个位置预测“{next}”）",
    "fed": "（这个位置写出的片段；它的输入是“{fed}”）",
    "hover": "{text}：它最关注的键及其权重。",
    "sentence": "句子 {n}（英文）",
    "translation": "模型的译文（德文）",
    "label": "{label}：",
}


def counts(words: int, hanzi: int, code: int, printed: int, figures: int) -> str:
    return (f"{hanzi:,} 个汉字，{words:,} 个英文词，{code:,} 行代码，{printed:,} 行输出，"
            f"{figures} 幅图")


def sphinx_setup(app) -> None:
    """What Sphinx needs for Chinese beyond its settings: the folds' prompts, and the search."""
    fold_prompts_in_chinese(app)
    chinese_search()


def fold_prompts_in_chinese(app) -> None:
    """myst-nb fills a fold's prompt ("显示{type}") with an English word for what it hides
    (source, output): written in Chinese (FOLDED) once the folds are made."""
    from myst_nb.sphinx_ import HideCodeCellNode
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class FoldPrompts(SphinxPostTransform):
        default_priority = 200                      # after myst-nb makes the folds (199)
        formats = ("html",)

        def run(self, **kwargs):
            for node in self.document.findall(HideCodeCellNode):
                for key in ("prompt_show", "prompt_hide"):
                    node[key] = re.sub(r"[a-z]+$", lambda m: FOLDED.get(m[0], m[0]), node[key])

    app.add_post_transform(FoldPrompts)


def chinese_search() -> None:
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

