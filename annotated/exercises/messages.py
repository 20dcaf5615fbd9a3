"""The words of every check message, one dictionary per language of the book.

A message is one line: the head (which exercise), then what happened. The pieces below are
put together by annotated.exercises.core; each exercise brings its own topic, case labels,
hint and slips, as a `Text` in every language.
"""

MESSAGES = {
    "en": {
        "head": "Exercise {id} ({topic}): ",
        "sep": " ",
        "passed": "passed all {n} cases.",
        "stub": "not attempted yet: write `{name}` in place of `raise NotImplementedError`, "
                "then run this cell again.",
        "not_callable": "`{name}` is not a function (its type is {got}).",
        "own": "`{name}` here is the package's own function (from {module}): the exercise is to "
               "write it yourself.",
        "raised": "case '{case}': your function raised {error}{where}.",
        "line": " at line {line} of your code",
        "line_code": " at line {line} of your code (`{code}`)",
        "case": "case '{case}': {problem}.",
        "count": "expected {expected} values returned, got {got}",
        "returned": "value {i} of the {n} returned: {problem}",
        "type": "expected a tensor or a number, got a {got}",
        "shape": "expected shape {expected}, got {got}",
        "dtype": "expected dtype {expected}, got {got}",
        "value_at": "at index {where} expected {expected}, got {got}",
        "value": "expected {expected}, got {got}",
        "hint": "Hint: {hint}",
        "page": "(see the book's page Common slips)",
        # the grader's table
        "graded": "{passed} of {total} passed",
        "timeout": "stopped after {seconds:g} s: a cell ran too long (cell {cell})",
        "cell_raised": "{n} cell(s) raised an error; the first is cell {cell} ({error})",
        "not_notebook": "not a notebook: {problem}",
        "died": "the notebook's kernel died ({why})",
        "no_exercises": "no exercise of this book's chapters found (no `check(\"N.K\", ...)` "
                        "cell)",
    },
    "zh": {
        "head": "练习 {id}（{topic}）：",
        "sep": "",
        "passed": "全部 {n} 个用例通过。",
        "stub": "尚未作答：请在 `raise NotImplementedError` 处写出 `{name}`，再运行这个单元格。",
        "not_callable": "`{name}` 不是函数（它的类型是 {got}）。",
        "own": "这里的 `{name}` 是本包自带的函数（来自 {module}）：这个练习要你自己写。",
        "raised": "用例“{case}”：你的函数抛出了 {error}{where}。",
        "line": "，位于你代码的第 {line} 行",
        "line_code": "，位于你代码的第 {line} 行（`{code}`）",
        "case": "用例“{case}”：{problem}。",
        "count": "应当返回 {expected} 个值，实际返回了 {got} 个",
        "returned": "返回的 {n} 个值中的第 {i} 个：{problem}",
        "type": "应当返回张量或数值，实际得到的是 {got}",
        "shape": "形状应为 {expected}，实际为 {got}",
        "dtype": "数据类型应为 {expected}，实际为 {got}",
        "value_at": "下标 {where} 处应为 {expected}，实际为 {got}",
        "value": "应为 {expected}，实际为 {got}",
        "hint": "提示：{hint}",
        "page": "（见本书的“常见错误”一页）",
        "graded": "通过 {passed} / {total}",
        "timeout": "{seconds:g} 秒后停止：有单元格运行过久（第 {cell} 个单元格）",
        "cell_raised": "{n} 个单元格出错；第一个是第 {cell} 个单元格（{error}）",
        "not_notebook": "不是 notebook：{problem}",
        "died": "notebook 的内核意外退出（{why}）",
        "no_exercises": "没有找到本书各章的练习（没有 `check(\"N.K\", ...)` 单元格）",
    },
}
