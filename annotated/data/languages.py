"""Which language a text is in: from its script, for the languages written without spaces
between words (`guess_language`), and from its commonest words, for some written with them
(`guess_spaced_language`).

A translation scored against references in another language, a model given input in another
language than its source, or a corpus split in another language than the rest of its side: each
goes through without an error and gives a number that means nothing. The commonest short words
of a language make up a large share of any text in it, and few of another's, so counting them
tells the languages below apart.
"""

import unicodedata

# Unicode script of a character (the start of its name) -> the language guessed for it.
SCRIPTS = {"CJK": "zh", "HIRAGANA": "ja", "KATAKANA": "ja", "HANGUL": "ko", "THAI": "th",
           "LAO": "lo", "KHMER": "km", "MYANMAR": "my"}
# The commonest short words of some languages written with spaces.
COMMON_WORDS = {
    "en": "the of and to a an in is are that it for on with was at by from his her while two "
          "three four",
    "de": "der die das und ist sind ein eine einem einer einen mit auf den dem im von zu nicht "
          "sich des für zwei drei vier",
    "fr": "le la les et est sont un une des du dans sur avec en au aux qui pour de il elle deux "
          "trois quatre",
    "es": "el la los las y es están un una en con del que por para se está al sus dos tres cuatro",
    "it": "il lo la gli le e è un una di in con del della che per sono sta due tre quattro",
    "nl": "de het een en is zijn van in op met niet te dat aan voor die twee drie vier",
    "pt": "o a os as e é um uma de do da em no na com que para está dois duas três quatro",
}
WORD_SETS = {lang: set(words.split()) for lang, words in COMMON_WORDS.items()}
# Letters some of those languages write and English does not: with one common word, a short
# text holding one of them is taken to be in that word's language (guess_short_language).
LETTERS = {"de": "äöüß", "fr": "éèêàçœëîïôù", "es": "ñ¿¡áíóú", "it": "àèìòù",
           "pt": "ãõçáâêéíóú", "nl": "ĳ"}
# Latin letters and digits in their full-width forms (Ｅｉｎ, as East Asian input methods write
# them), to the letters they stand for: str.translate's table.
FULL_WIDTH_LATIN = {c: c - 0xFEE0 for c in [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B),
                                            *range(0xFF41, 0xFF5B)]}
# Three-letter codes (ISO 639-2, both its forms, and 639-3) of languages often translated:
# corpora name their sides with these (test.eng, test.deu) as often as with two letters.
THREE_LETTER_CODES = frozenset("""
ara ben bul cat ces chi cze dan deu dut ell eng est eus fas fin fra fre ger gle glg gre heb hin
hrv hun ind isl ita jpn kor lav lit may msa mlt nld nob nor per pol por ron rum rus slk slo slv
spa srp swa swe tam tel tha tur ukr urd vie zho""".split())

# The English names of common languages, as file names spell them (test2016.German).
LANGUAGE_NAMES = frozenset("""
arabic bengali bulgarian catalan chinese czech danish dutch english estonian finnish french
german greek hebrew hindi hungarian icelandic indonesian italian japanese korean latvian
lithuanian norwegian persian polish portuguese romanian russian slovak slovenian spanish
swedish thai turkish ukrainian urdu vietnamese""".split())


def guess_spaced_language(lines, sample: int = 200) -> str | None:
    """Which of COMMON_WORDS's languages text written with spaces is in, from the share of its
    words that are that language's commonest ones; None when no language stands out, or when
    the text has too few words (under 20) to tell."""
    words = words_of(lines, sample)
    if len(words) < 20:
        return None
    (best, lang), (second, _) = common_word_hits(words)[:2]
    return lang if best >= 0.15 * len(words) and best >= 1.3 * second else None


def guess_short_language(lines, sample: int = 200) -> str | None:
    """guess_spaced_language, and for text of under 20 words (a sentence or two given to
    translate) a stricter guess: the language of which at least two words are common ones, at
    least twice as many as any other language's; or of which one word is, and no other
    language's, where the text also bears that language's mark (shows_its_language). For
    notes, not for refusals."""
    words = words_of(lines, sample)
    if len(words) >= 20:
        return guess_spaced_language(lines, sample)
    (best, lang), (second, _) = common_word_hits(words)[:2]
    if best >= 2 and best >= 2 * second:
        return lang
    return lang if best == 1 and second == 0 and shows_its_language(lines, lang) else None


def shows_its_language(lines, lang: str) -> bool:
    """Whether text holds a letter of LETTERS[lang], or for German a noun capitalised inside a
    sentence (Zwei Hunde spielen im Schnee)."""
    lines = list(lines)
    if any(c in LETTERS.get(lang, "") for line in lines for c in line.lower()):
        return True
    return lang == "de" and any(w[:1].isupper() for line in lines for w in line.split()[1:])


def words_of(lines, sample: int) -> list[str]:
    """The words of the first `sample` lines, lowercased, their punctuation stripped."""
    return [w.strip(".,;:!?\"'()").lower() for line in list(lines)[:sample] for w in line.split()]


def common_word_hits(words: list[str]) -> list[tuple[int, str]]:
    """(how many of `words` are a language's common ones, the language), most first."""
    return sorted(((sum(w in common for w in words), lang) for lang, common in WORD_SETS.items()),
                  reverse=True)


def guess_language(lines, sample: int = 200) -> str | None:
    """The language of text written without spaces, from its script (Japanese when kana
    appear among Chinese characters); None for text mostly in other scripts."""
    counts, letters = {}, 0
    for line in list(lines)[:sample]:
        for ch in line:
            if ch.isspace() or not ch.isalpha():
                continue
            letters += 1
            script = unicodedata.name(ch, "").split(" ")[0]
            if script in SCRIPTS:
                counts[SCRIPTS[script]] = counts.get(SCRIPTS[script], 0) + 1
    if not counts or sum(counts.values()) < 0.3 * letters:
        return None
    if counts.get("ja", 0) >= 0.05 * sum(counts.values()):
        return "ja"
    return max(counts, key=counts.get)
