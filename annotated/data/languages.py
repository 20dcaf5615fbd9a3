"""Which language a text written with spaces is in, from its commonest words.

A translation scored against references in another language, a model given input in another
language than its source, or a corpus split in another language than the rest of its side: each
goes through without an error and gives a number that means nothing. The commonest short words
of a language make up a large share of any text in it, and few of another's, so counting them
tells the languages below apart.
"""

# The commonest short words of some languages written with spaces.
COMMON_WORDS = {
    "en": "the of and to a an in is are that it for on with was at by from his her while",
    "de": "der die das und ist sind ein eine einem einer einen mit auf den dem im von zu nicht "
          "sich des für",
    "fr": "le la les et est sont un une des du dans sur avec en au aux qui pour de il elle",
    "es": "el la los las y es están un una en con del que por para se está al sus",
    "it": "il lo la gli le e è un una di in con del della che per sono sta",
    "nl": "de het een en is zijn van in op met niet te dat aan voor die",
    "pt": "o a os as e é um uma de do da em no na com que para está",
}
WORD_SETS = {lang: set(words.split()) for lang, words in COMMON_WORDS.items()}


def guess_spaced_language(lines, sample: int = 200) -> str | None:
    """Which of COMMON_WORDS's languages text written with spaces is in, from the share of its
    words that are that language's commonest ones; None when no language stands out."""
    words = [w.strip(".,;:!?\"'()").lower() for line in list(lines)[:sample] for w in line.split()]
    if len(words) < 20:
        return None
    hits = sorted(((sum(w in common for w in words), lang) for lang, common in WORD_SETS.items()),
                  reverse=True)
    (best, lang), (second, _) = hits[0], hits[1]
    return lang if best >= 0.15 * len(words) and best >= 1.3 * second else None
