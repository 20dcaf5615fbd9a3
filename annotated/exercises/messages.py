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
        "not_callable": "`{name}` is not a function (its type is {got}): run the cell that "
                        "defines your `{name}` again (a later cell may have given the name "
                        "another value), then this check.",
        "quoted": "you gave the check the text {got!r}, not the function: pass the function "
                  "itself, without quotes: check(\"{id}\", {name}).",
        "called": "you gave the check a {got}, which looks like what your function returns, "
                  "not the function: pass the function itself, without calling it: "
                  "check(\"{id}\", {name}).",
        "own": "`{name}` here is the project's own function (from {module}): the exercise is to "
               "write it yourself.",
        "raised": "case '{case}': your function raised {error}{where}.",
        "line": " at line {line} of your code",
        "line_code": " at line {line} of your code (`{code}`)",
        "case": "case '{case}': {problem}.",
        "none": "your function returned None: it needs a `return`",
        "generator": "your function is a generator (it uses `yield`): `return` the values instead",
        "async": "your function is written with `async def`, and calling it only makes a "
                 "coroutine: write it with a plain `def`.",
        "forbidden": "your function calls {name}, which this exercise asks you to do "
                     "without: build that step yourself. Hint: {hint}",
        "forbidden_inside": "your function calls {inside}, which calls {name}, and this "
                            "exercise asks you to do without it: build that step yourself. "
                            "Hint: {hint}",
        "compiled": "your function goes through {name}, whose compiled code runs out of the "
                    "check's sight: check it as plain Python, and compile it once it passes. "
                    "Hint: {hint}",
        "process": "your function starts another process ({name}), whose code runs out of the "
                   "check's sight: compute the result in your function itself. Hint: {hint}",
        "calls_own": "your function calls {name}, the project's own code: the exercise is to "
                     "write that step yourself, with torch (your own functions from earlier "
                     "exercises are fine). Hint: {hint}",
        "again": "case '{case}' made again with other random numbers: "
                 "{problem}. An answer that gives back a result kept from an earlier call fails "
                 "here: compute each result from the inputs it is given.",
        "redrawn": "case '{case}' made again with other random numbers: {problem}.",
        "slow": "case '{case}': your function ran for more than {seconds} s and was stopped, "
                "where the book's answer takes a moment: look for a loop that never ends, or "
                "one that goes step by step where a formula (or one tensor operation) does it "
                "at once.",
        "raised_in": "your function raised {error}{where}",
        "tampered": "case '{case}': your function changed what the check compares its answer "
                    "with; leave the book's code and the check as they are.",
        "emptied": "the check found no case to run: your code changed the check itself; leave "
                   "the book's code and the check as they are.",
        "changed": "case '{case}': your function changed its argument `{name}` in place; leave "
                   "its inputs as they were and compute a new result.",
        "count": "expected {expected} values returned, got {got}",
        "not_tuple": "expected {expected} values returned, as a tuple (return a, b, c), got a "
                     "{got}",
        "not_tuple_inner": "expected a tuple of {expected} items, got a {got}: keep them apart, "
                           "one item each, not stacked into one",
        "count_inner": "expected {expected} items, got {got}",
        "genexpr": "expected a tuple, got a generator expression (x for ...), which gives its "
                   "values only once, as they are asked for: make it a tuple, tuple(x for ...)",
        "returned": "value {i} of the {n} returned: {problem}",
        "item": "its item {i} of {n}: {problem}",
        "type": "expected a tensor or a number, got a {got}",
        "number_type": "expected a tensor, or a number as a Python float or int, got a {got}: "
                       "give it back with float()",
        "complex": "expected a real number, got the complex number {got}: a negative number "
                   "raised to a fractional power, or a square root of one, is complex in "
                   "Python; keep the arithmetic in real numbers",
        "unreadable": "what your function returned cannot be read: reading it raised {error}; "
                      "return plain tensors and numbers",
        "not_tensor": "expected a torch tensor, got a {got}: keep the result a tensor (the "
                      "chapter's code goes on with torch operations on it)",
        "layout": "got a tensor of layout {layout}, not a plain (strided) one: the "
                  "chapter's code goes on with torch operations that such a tensor does not "
                  "support; return a plain tensor (.to_dense())",
        "meta": "got a tensor on the meta device, which holds shapes but no values: compute "
                "it on the CPU",
        "shape": "expected shape {expected}, got {got}",
        "dtype": "expected dtype {expected}, got {got}",
        "value_at": "at index {where} expected {expected}, got {got}",
        "value": "expected {expected}, got {got}",
        "half_rounding": " (off by at most {off}, the rounding of a float16 result: return the "
                         "number in float32 or float64)",
        "rounding": " (off by at most {off}, as little as float32's rounding: compute in "
                    "float64, the dtype of the inputs (a Python float is float64 too), with "
                    "no float32 step, and exactly, not approximated (by a fit, a solve or "
                    "finite differences))",
        "float32_result": " (off by at most {off}: your answer is float32; give it back in "
                          "float64, as the check expects)",
        "float64_way": " (off by at most {off}, far less than any float32 step makes it: your "
                       "float64 arithmetic takes a long, ill-conditioned or approximate way (a "
                       "solve, a fit, finite differences); compute the result exactly, from its "
                       "formula)",
        "rounded": " (your result is rounded to {decimals} decimal(s): give back the full "
                   "value; round only where a number is shown)",
        "hint": "Hint: {hint}",
        "page": "(see the book's page Common slips)",
        # the grader's table
        "graded": "{passed} of {total} passed",
        "timeout": "stopped after {detail} s, before the notebook finished (more time: "
                   "--timeout)",
        "kernel_died": "the notebook's kernel died in cell {detail}",
        "kernel_ended": "cell {detail} ends the notebook's kernel (exit(), quit() or a "
                        "shutdown), so the cells after it did not all run: remove that call",
        "stopped_in_cell": "stopped at --timeout in cell {detail}, before the notebook finished "
                           "(the checks before it count): give more time with --timeout, or "
                           "look at that cell (one that ignores an interrupt runs on past "
                           "--cell-timeout)",
        "signalled": "its process was stopped in cell {detail}, not by the grader: the "
                     "notebook's own code may have sent it a signal (the checks before it "
                     "count)",
        "report_failed": "the grading cell after the notebook raised {detail}",
        "unfinished": "the notebook did not run to its end",
        "unfinished_at": "the notebook did not run to its end: it stopped in cell {detail} (the "
                         "checks before it count)",
        "ignored_interrupt": "cell {detail} ran past --cell-timeout and did not stop when "
                             "interrupted (code that ignores Ctrl-C, or waits inside a "
                             "library), so the cells after it did not run (the checks before it "
                             "count)",
        "crashed": "the notebook could not be run ({detail})",
        "cell_stopped": "cell(s) {cells} ran past {seconds:g} s and were stopped",
        "cell_continued": "in cell(s) {cells} its code stopped its own kernel (SIGSTOP), "
                          "which the grader let go on",
        "cell_raised": "{n} cell(s) raised an error, the first cell {cell} ({error})",
        "not_notebook": "not a notebook: {problem}",
        "not_regular": "not a regular file (a device, a pipe or a socket)",
        "too_large": "{size} MB, more than a notebook of this book holds (at most {limit} MB): "
                     "clear its outputs in Jupyter (Edit > Clear Outputs of All Cells), save it "
                     "and hand it in again",
        "archive": "{tool}-compressed data, not a notebook: unpack it and hand in the .ipynb "
                   "inside",
        "not_utf8": "not UTF-8 text (line {line}), as a notebook is: open it in Jupyter and "
                    "save it, or convert it (iconv -f {encoding} -t utf-8 FILE > NEW.ipynb)",
        "not_json": "not JSON (it breaks off or goes wrong at line {detail}): save it again "
                    "from Jupyter, or restore it from a copy",
        "python_script": "a Python script: the checks run in a notebook; put "
                         "its code into the chapter's notebook (in Jupyter) and hand in the "
                         "`.ipynb`",
        "empty_file": "an empty file: it may not have been saved; save the notebook in "
                      "Jupyter and hand it in again",
        "no_cells": "JSON without the {detail} that a notebook has",
        "wrong_type": "JSON whose `{detail}` is {found} where a notebook has {expected}: save "
                      "the notebook again from Jupyter, or mend that entry",
        "json_types": {"object": "an object", "list": "a list", "string": "a string",
                       "number": "a number", "boolean": "`true` or `false`", "null": "`null`",
                       "text": "a string or a list of strings"},
        "old_nbformat": "a notebook of format {detail}, older than the format 4 this book "
                        "reads: open it in Jupyter and save it, or convert it (jupyter "
                        "nbconvert --to notebook --nbformat 4 FILE)",
        "other_nbformat": "a notebook whose format is {detail}, where this book reads format "
                          "4: open it in Jupyter and save it",
        "invalid": "a notebook Jupyter's checks refuse ({detail}): open it in Jupyter and "
                   "save it",
        "a_folder": "a folder, not a notebook: give the notebooks in it ({path}/*.ipynb)",
        "no_file": "no such file: check the path",
        "dangling": "a link to {target}, which does not exist: give the notebook itself, or "
                    "make the link point to it",
        "link_loop": "a link that leads back to itself (a loop of links), not a notebook: give "
                     "the notebook itself, or make the link point to it",
        "restored": "while it ran, {paths} changed (by its code, or by another program at "
                    "the same time), put back as it was",
        "found_kept": "what stood in its place, or on the way to it, is kept as {found}",
        "restored_gone": "while it ran, {paths} went (deleted by its code, or by another "
                         "program at the same time), put back as it was",
        "more": " and {n} more",
        "not_restored": "while it ran, its code changed {paths}, which could not be put back "
                        "(too large to keep a copy of, or made unwritable): check it",
        "added": "while it ran, its code added {paths} beside the submissions: delete what "
                 "is not wanted",
        "guard_put_back": "while it ran, its code changed {paths}, code that the notebooks "
                          "graded after it run: put back as it was",
        "guard_moved": "while it ran, its code added {paths}, which Python would import or "
                       "run in the notebooks graded after it: moved aside as {found}",
        "guard_changed": "while it ran, {paths} changed in Python's installation, which cannot "
                         "be put back: reinstall what it belongs to, and grade the notebooks "
                         "after this one again",
        "not_graded": "could not be graded: {why}",
        "no_exercises": "no exercise of this book's chapters found (no `check(\"N.K\", ...)` "
                        "cell)",
        "not_coding": "Exercise {id} is {kind}, which has no check: work it out, then compare "
                      "with the chapter (and with the solutions when you are done)",
        "kinds": {"predict, then run": "a predict-then-run exercise",
                  "derive": "a derivation"},
        "solutions_opened": "its code opened the book's solutions ({files}): the checks it "
                            "passed may not be its own work",
        "unknown_id": "`check(\"{id}\", ...)` names no exercise of this book (its numbers "
                      "nearest: {known}); correct the number",
        "id_as_text": "`check({given}, ...)`: give the exercise's number as text, in quotes: "
                      "`check(\"{id}\", ...)`",
        "usage": "`check` takes two things: the exercise's number, in quotes, then your "
                 "function: `check(\"{id}\", {name})`",
        "needs_fn": "`check(\"{id}\")` needs your function too: "
                    "`check(\"{id}\", your_function)`",
        "swapped": "`{written}`: the exercise's number comes first, in quotes, then your "
                   "function: `check(\"{id}\", {name})`",
        "notes_sep": "; ",
        "legend": "✓ passed  ✗ failed  · not attempted  ? not run (its check never ran)",
    },
    "zh": {
        "head": "练习 {id}（{topic}）：",
        "sep": "",
        "passed": "全部 {n} 个用例通过。",
        "stub": "尚未作答：请在 `raise NotImplementedError` 处写出 `{name}`，再运行这个单元格。",
        "not_callable": "`{name}` 不是函数（它的类型是 {got}）：请重新运行定义你的 `{name}` "
                        "的单元格（后面的单元格可能给这个名字赋了别的值），再运行这个检查。",
        "quoted": "你交给检查的是文本 {got!r}，而不是函数：请直接传入函数本身，不要加引号："
                  "check(\"{id}\", {name})。",
        "called": "你交给检查的是一个 {got}，看起来像是函数的返回值，而不是函数：请直接传入函数本身，"
                  "不要调用它：check(\"{id}\", {name})。",
        "own": "这里的 `{name}` 是本项目里现成的函数（来自 {module}）：这道练习要你自己写。",
        "raised": "用例“{case}”：你的函数抛出了 {error}{where}。",
        "line": "，位于你代码的第 {line} 行",
        "line_code": "，位于你代码的第 {line} 行（`{code}`）",
        "case": "用例“{case}”：{problem}。",
        "count": "应当返回 {expected} 个值，实际返回了 {got} 个",
        "not_tuple": "应当以元组的形式返回 {expected} 个值（return a, b, c），实际返回的是一个 {got}",
        "not_tuple_inner": "应当是含 {expected} 项的元组，实际得到的是一个 {got}：各项要分开放，每项一个，不要堆叠成一个",
        "count_inner": "应当有 {expected} 项，实际有 {got} 项",
        "genexpr": "应当是元组，实际得到的是生成器表达式 (x for ...)，它只在被取用时给出一次值：请把它变成元组，tuple(x for ...)",
        "none": "你的函数返回了 None：它还缺一条 `return` 语句",
        "generator": "你的函数是一个生成器（用了 `yield`）：请改用 `return` 返回结果",
        "async": "你的函数是用 `async def` 写的，调用它只会得到一个协程（coroutine）：请改用普通的 `def` 来写。",
        "forbidden": "你的函数调用了 {name}，而这道练习要求不用它：请自己写出这一步。提示：{hint}",
        "forbidden_inside": "你的函数调用了 {inside}，它在内部调用了 {name}，而这道练习要求不用它："
                            "请自己写出这一步。提示：{hint}",
        "compiled": "你的函数经过了 {name}，编译后的代码在检查看不到的地方运行：请以普通 Python 函数来检查，通过之后再编译。提示：{hint}",
        "process": "你的函数启动了另一个进程（{name}），其代码在检查看不到的地方运行：请在你的函数里直接算出结果。提示：{hint}",
        "calls_own": "你的函数调用了 {name}，这是本项目里现成的代码：这道练习要你用 `torch` 自己写出这一步（调用你在前面练习里写的函数没有问题）。提示：{hint}",
        "again": "用例“{case}”换成另一组随机数重新生成后：{problem}。"
                 "如果答案交回的是之前某次调用时留下的结果，就会在这里出错：每个结果都要由传入的输入算出。",
        "redrawn": "用例“{case}”换成另一组随机数重新生成后：{problem}。",
        "slow": "用例“{case}”：你的函数运行超过 {seconds} 秒，已被停下，而本书的答案只需片刻："
                "请检查是否有永不结束的循环，或者逐步循环去做本可以用一个公式（或一次张量运算）"
                "完成的事。",
        "raised_in": "你的函数抛出了 {error}{where}",
        "tampered": "用例“{case}”：你的函数改动了检查用来比对答案的东西；请让本书的代码和检查保持原样。",
        "emptied": "检查找不到可运行的用例：你的代码改动了检查本身；请让本书的代码和检查保持原样。",
        "changed": "用例“{case}”：你的函数原地修改了参数 `{name}`；请保持输入不变，另算出新的结果。",
        "returned": "返回的 {n} 个值中的第 {i} 个：{problem}",
        "item": "其中 {n} 项里的第 {i} 项：{problem}",
        "type": "应当返回张量或数值，实际得到的是 {got}",
        "number_type": "应当返回张量，或 Python 的 `float`、`int` 数值，实际得到的是 {got}："
                       "请用 float() 转换后再返回",
        "complex": "应当返回实数，实际得到的是复数 {got}：在 Python 里，负数的分数次幂（或负数的平方根）"
                   "是复数；请让运算始终停留在实数范围内",
        "unreadable": "无法读取你的函数返回的值：读取时引发了 {error}；请返回普通的张量和数值",
        "not_tensor": "应当返回 PyTorch 张量，实际得到的是 {got}：请让结果保持为张量（本章后面的代码还要用 PyTorch 对它运算）",
        "layout": "得到的张量布局是 {layout}，不是普通的（strided）张量：本章后面的代码还要对它做 PyTorch 运算，"
                  "而这种张量不支持这些运算；请返回普通张量（`.to_dense()`）",
        "meta": "得到的张量只有形状、没有数值：请在 CPU 上计算它",
        "shape": "形状应为 {expected}，实际为 {got}",
        "dtype": "数据类型应为 {expected}，实际为 {got}",
        "value_at": "下标 {where} 处应为 {expected}，实际为 {got}",
        "value": "应为 {expected}，实际为 {got}",
        "half_rounding": "（最多差 {off}，这是 float16 结果的舍入误差：请用 float32 或 float64 返回这个数）",
        "rounding": "（最多差 {off}，与 float32 的舍入误差相当：请用 float64 计算，即输入的数据类型"
                    "（Python 的 `float` 也是 float64），中间不要经过 float32，并且要精确计算，"
                    "不要用拟合、求解方程或有限差分之类的近似）",
        "float32_result": "（最多差 {off}：你的答案是 float32；请按检查的要求以 float64 返回）",
        "float64_way": "（最多差 {off}，远小于任何 float32 步骤造成的误差：你的 float64 运算走了一条"
                       "很长、病态或近似的路（求解方程、拟合、有限差分）；请按公式精确计算结果）",
        "rounded": "（你的结果舍入到了 {decimals} 位小数：请返回完整的值；只在显示数字时才舍入）",
        "hint": "提示：{hint}",
        "page": "（见本书的“常见错误”一页）",
        "graded": "通过 {passed} / {total}",
        "timeout": "{detail} 秒后停止，笔记本还没有运行完（要给更多时间：--timeout）",
        "kernel_died": "笔记本的内核在第 {detail} 个单元格意外退出",
        "kernel_ended": "第 {detail} 个单元格结束了笔记本的内核（`exit()`、`quit()` 或关闭内核），"
                        "所以它之后的单元格没有全部运行：请删掉这个调用",
        "stopped_in_cell": "到 --timeout 时在第 {detail} 个单元格停止，笔记本还没有运行完（之前的检查照常计分）：请用 --timeout 给更多时间，或检查那个单元格（忽略中断的单元格会越过 --cell-timeout 一直运行）",
        "signalled": "它的进程在第 {detail} 个单元格被停止，不是评分程序所为：可能是笔记本自己的代码发出了信号（之前的检查照常计分）",
        "report_failed": "笔记本之后的评分单元格出错：{detail}",
        "unfinished": "笔记本没有运行到最后",
        "unfinished_at": "笔记本没有运行到最后：它停在第 {detail} 个单元格（之前的检查照常计分）",
        "ignored_interrupt": "第 {detail} 个单元格运行超过 --cell-timeout，被中断后仍没有停下（代码忽略了 Ctrl-C，或在某个库内部等待），所以它之后的单元格都没有运行（之前的检查照常计分）",
        "crashed": "无法运行这个笔记本（{detail}）",
        "cell_stopped": "第 {cells} 个单元格运行超过 {seconds:g} 秒，已被停止",
        "cell_continued": "在第 {cells} 个单元格中，其中的代码暂停了自己的内核（SIGSTOP），评分程序已让它继续运行",
        "cell_raised": "{n} 个单元格出错，第一个是第 {cell} 个单元格（{error}）",
        "not_notebook": "不是笔记本：{problem}",
        "not_regular": "不是普通文件（而是设备、管道或套接字）",
        "too_large": "{size} MB，超过了本书笔记本的大小（最多 {limit} MB）：请在 Jupyter 中清除所有输出"
                     "（Edit > Clear Outputs of All Cells），保存后重新提交",
        "archive": "这是 {tool} 压缩的数据，不是笔记本：请先解压，提交里面的 `.ipynb` 文件",
        "not_utf8": "不是 UTF-8 文本（第 {line} 行），而笔记本应当是：请在 Jupyter 中打开并保存，或者转换它（iconv -f {encoding} -t utf-8 FILE > NEW.ipynb）",
        "not_json": "不是 JSON（在第 {detail} 行中断或出错）：请在 Jupyter 里重新保存，或从备份恢复",
        "empty_file": "这是一个空文件：也许没有保存；请在 Jupyter 中保存笔记本，再交一次",
        "python_script": "这是 Python 脚本：检查要在笔记本中运行；请把其中的代码放进本章的笔记本"
                         "（在 Jupyter 中），再交 `.ipynb` 文件",
        "no_cells": "是 JSON，但没有笔记本应有的 {detail}",
        "wrong_type": "是 JSON，但其中的 `{detail}` 是{found}，而笔记本在这里应是{expected}："
                      "请在 Jupyter 中重新保存笔记本，或改正这一项",
        "json_types": {"object": "一个对象", "list": "一个列表", "string": "一个字符串",
                       "number": "一个数", "boolean": "`true` 或 `false`", "null": "`null`",
                       "text": "一个字符串或字符串列表"},
        "old_nbformat": "这是第 {detail} 版格式的笔记本，早于本书读取的第 4 版：请在 Jupyter "
                        "中打开并保存，或者转换它（jupyter nbconvert --to notebook --nbformat 4 FILE）",
        "other_nbformat": "这个笔记本的格式是 {detail}，而本书读取第 4 版格式：请在 Jupyter 中打开并保存",
        "invalid": "这个笔记本没有通过 Jupyter 的检查（{detail}）：请在 Jupyter 中打开并保存",
        "a_folder": "这是一个文件夹，不是笔记本：请给出其中的笔记本（{path}/*.ipynb）",
        "no_file": "没有这个文件：请检查路径",
        "dangling": "是指向 {target} 的链接，而它并不存在：请直接给出笔记本本身，或让链接指向它",
        "link_loop": "是一个绕回自身的链接（链接成环），不是笔记本：请直接给出笔记本本身，或让链接指向它",
        "restored": "它运行时，{paths} 被改动（由其中的代码，或同时运行的其他程序），已恢复原样",
        "found_kept": "在原处（或通往它的路径上）发现的东西另存为 {found}",
        "restored_gone": "它运行时，{paths} 被删除（由其中的代码，或同时运行的其他程序），已恢复原样",
        "more": " 等，另有 {n} 个",
        "not_restored": "它运行时，其中的代码改动了 {paths}，无法恢复（文件太大没有留副本，或已不可写）：请检查",
        "added": "它运行时，其中的代码在提交的文件旁边新建了 {paths}：不需要的请删除",
        "guard_put_back": "它运行时，其中的代码改动了 {paths}，之后评分的笔记本都要运行这些代码："
                          "已恢复原样",
        "guard_moved": "它运行时，其中的代码新建了 {paths}，之后评分的笔记本启动时 Python 会导入或"
                       "运行它：已移到一旁，另存为 {found}",
        "guard_changed": "它运行时，Python 安装中的 {paths} 被改动，无法恢复：请重新安装它所属的包，"
                         "并重新评分这个笔记本之后的各个笔记本",
        "not_graded": "无法评分：{why}",
        "no_exercises": "没有找到本书各章的练习（没有 `check(\"N.K\", ...)` 单元格）",
        "not_coding": "练习 {id} 是{kind}，没有检查：先自己做出来，再与本章对照（做完后也可以看答案）",
        "kinds": {"predict, then run": "一道先预测、再运行的练习", "derive": "一道推导题"},
        "solutions_opened": "它的代码打开了本书的解答（{files}）：它通过的检查可能不是它自己做的",
        "unknown_id": "`check(\"{id}\", ...)` 不是本书的练习编号（相近的编号：{known}）；请改正编号",
        "id_as_text": "`check({given}, ...)`：练习编号要写成带引号的文本：`check(\"{id}\", ...)`",
        "usage": "`check` 要两样东西：先是带引号的练习编号，再是你的函数：`check(\"{id}\", {name})`",
        "needs_fn": "`check(\"{id}\")` 还需要你的函数：`check(\"{id}\", your_function)`",
        "swapped": "`{written}`：练习编号在前，写成带引号的文本，你的函数在后：`check(\"{id}\", {name})`",
        "notes_sep": "；",
        "legend": "✓ 通过  ✗ 未通过  · 尚未作答  ? 未运行（它的检查没有运行）",
    },
}
