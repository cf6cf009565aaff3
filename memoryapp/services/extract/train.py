"""Trains the general path's classifiers (services.extract.classifier) from the corpus' DEV split
and writes weights.npz. Reproducible: the same dev files give the same weights.

    .venv/bin/python -m memoryapp.services.extract.train [--out PATH]

Only `*.dev.jsonl` is read, and the training-only items beside this module (`training/`, written for
training by writers who saw neither split): the test split measures the finished system and is never
trained or tuned on. Each message is cut into pieces as the extractor cuts it (general.pieces); a piece is a
durable example when it holds an expected fact's must-words, a non-durable one when it comes from a
message that must yield nothing or holds none of its message's facts. Change pairs add their
statements' pieces that hold the value. Thresholds come from 5-fold out-of-fold probabilities on dev:
the durable threshold keeps spurious messages near SPURIOUS_TARGET, the veto threshold drops rule
output only where almost no fact-bearing piece scores that low. The durable head's folds are dealt by writer
(a corpus part, a training file): a threshold is chosen on scores of writers the model never read, as the
sentences it meets at run time are. Folded by message, the estimate was optimistic: 4.0% spurious out of
fold, where parts v and w, measured held out before they were trained on, gave 5.2% (3 of 58).
The question head (which family of fact a question asks about) is trained on the dev question set
(evaluation/questions): its test files are never read either.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import numpy as np

from memoryapp.evaluation import write_corpus

from . import classifier, general

SPURIOUS_TARGET = 0.04  # out-of-fold share of `none` messages with a piece over the threshold
CHANGE_FALSE_ALARM = 0.05  # out-of-fold share of messages stating a fact the change head calls a change
VETO_FACT_LOSS = 0.01  # out-of-fold share of fact-bearing pieces a veto may hit
C_DURABLE, C_WORDS, C_FAMILY, C_FAMILY_WORDS, C_CHANGE, FOLDS, SEED = 3.0, 4.0, 4.0, 8.0, 4.0, 5, 17
C_QUESTION = 4.0
# How the question head's training questions name the user: a name, or "the user" (the search addresses every
# name to "you" before embedding, so which names hardly matters).
QUESTION_NAMES = ("Sam", "the user", "Riley", "Noor")


def dev_hash(corpus_dir=None, training_dir=None, questions_dir=None) -> str:
    """Fingerprint of the dev, training and dev question files the weights are trained from."""
    digest = hashlib.sha256()
    paths = [*sorted((corpus_dir or write_corpus.CORPUS_DIR).glob("*.dev.jsonl")),
             *sorted((training_dir or write_corpus.TRAINING_DIR).glob("*.train.jsonl")),
             *sorted((questions_dir or write_corpus.QUESTIONS_DIR).glob("*dev.jsonl"))]
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _messages(corpus_dir=None, training_dir=None) -> list[write_corpus.Message]:
    return [*write_corpus.messages("dev", corpus_dir),
            *write_corpus.messages("train", training_dir or write_corpus.TRAINING_DIR)]


def _changes(corpus_dir=None, training_dir=None) -> list[write_corpus.ChangePair]:
    return [*write_corpus.changes("dev", corpus_dir),
            *write_corpus.changes("train", training_dir or write_corpus.TRAINING_DIR)]


def _continuations(corpus_dir=None, training_dir=None) -> list[write_corpus.ChangePair]:
    return [*write_corpus.continuations("dev", corpus_dir),
            *write_corpus.continuations("train", training_dir or write_corpus.TRAINING_DIR)]


def examples(corpus_dir=None, training_dir=None
             ) -> tuple[list[str], list[int], list[str], list[int], list[str], list[str], list[str]]:
    """(pieces, durable labels, family labels ("" for non-durable), message number for grouping, the
    text each piece's vector is encoded from, as at run time, the message each piece is of, and its writer: the
    part its id starts with, "u" of "u-m002")."""
    texts, labels, families, groups, encoded, messages, writers = [], [], [], [], [], [], []
    group = 0
    for message in _messages(corpus_dir, training_dir):
        group += 1
        found = general.pieces(message.text)
        # what a piece says once who or what it goes on with is known: "It's my comfort game" after "tips for
        # Stardew Valley?" holds the fact about Stardew Valley
        for piece, said, text in zip(found, general.resolved_pieces(found), general.encoded_texts(message.text, found),
                                     strict=True):
            holds = [f for f in message.facts if write_corpus.mentions(said, f.must)]
            texts.append(piece)
            encoded.append(text)
            messages.append(general.as_read(message.text))
            labels.append(1 if holds else 0)
            families.append(message.family if holds else "")
            groups.append(group if message.family != "none" else -group)
            writers.append(writer_of(message.id))
    for pair in _changes(corpus_dir, training_dir):
        for text, must in ((pair.before, pair.before_must), (pair.after, pair.after_must)):
            group += 1
            found = general.pieces(text)
            for piece, said, encoded_text in zip(found, general.resolved_pieces(found),
                                                 general.encoded_texts(text, found), strict=True):
                if write_corpus.mentions(said, must):
                    texts.append(piece)
                    encoded.append(encoded_text)
                    messages.append(general.as_read(text))
                    labels.append(1)
                    families.append(pair.family)
                    groups.append(group)
                    writers.append(writer_of(pair.id))
    return texts, labels, families, groups, encoded, messages, writers


def writer_of(item_id: str) -> str:
    """The corpus part or training file an item id belongs to: "u" of "u-m002", "tr3" of "tr3-c001"."""
    return item_id.split("-", 1)[0]


def train(corpus_dir=None, training_dir=None, questions_dir=None) -> dict[str, np.ndarray]:
    """The weights, from `corpus_dir`'s dev files, `training_dir`'s training items and `questions_dir`'s dev
    questions (the project's by default)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # training only: never imported at run time
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC

    from memoryapp import embeddings

    texts, labels, families, groups, encoded, messages, writers = examples(corpus_dir, training_dir)
    x = classifier.features(texts, embeddings.encode(encoded)).astype(np.float64)
    # the vector leg's input: the piece's features and its message's vector (one encoding per message)
    unique = sorted(set(messages))
    message_vectors = dict(zip(unique, embeddings.encode(unique), strict=True))
    x_durable = classifier.durable_input(x, np.vstack([message_vectors[m] for m in messages])).astype(np.float64)
    y, groups = np.array(labels), np.array(groups)
    statements = ~classifier.not_a_statement(texts)  # the others are never memories: nothing to learn

    # scikit-learn's gamma="scale", computed once so that the run-time kernel uses the very same number.
    gamma = float(1.0 / (x_durable.shape[1] * x_durable[statements].var()))

    def vector_model():
        # An RBF support-vector machine keeps more fact pieces than a linear model on the same vectors (out
        # of fold with the word leg: 87% against 84.5%); Platt scaling below turns its margin into a probability.
        return SVC(C=C_DURABLE, kernel="rbf", gamma=gamma)

    def word_model(on: np.ndarray):
        """The word leg fitted on the pieces `on`: (vectorizer, model)."""
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(texts_array[on])
        model = LogisticRegression(C=C_WORDS, max_iter=5000).fit(vectorizer.transform(texts_array[on]), y[on])
        return vectorizer, model

    texts_array = np.array(texts, dtype=object)

    # Out-of-fold probabilities, folds by writer: a writer's pieces never inform their own score.
    folds = _writer_folds(writers) if len(set(writers)) >= FOLDS else _folds(groups)
    margins, word_oof = np.zeros(len(y)), np.zeros(len(y))
    for fold in range(FOLDS):
        train_on = (folds != fold) & statements
        held_out = folds == fold
        margins[held_out] = (vector_model().fit(x_durable[train_on], y[train_on])
                             .decision_function(x_durable[held_out]))
        vectorizer, words = word_model(train_on)
        word_oof[held_out] = words.predict_proba(vectorizer.transform(texts_array[held_out]))[:, 1]
    # Platt scaling of the out-of-fold margins: what a margin means as a probability.
    calibration = LogisticRegression().fit(margins[statements].reshape(-1, 1), y[statements])
    scale, shift = float(calibration.coef_[0][0]), float(calibration.intercept_[0])
    oof = (1 / (1 + np.exp(-(scale * margins + shift))) + word_oof) / 2
    oof[~statements] = 0.0
    is_plain = classifier.plain(x[:, -len(classifier.cue_features([""])[0]):])
    threshold, plain_threshold = _thresholds(oof, y, groups, is_plain)
    fact_scores = np.sort(oof[(y == 1) & statements])  # the veto is for statements
    veto = float(fact_scores[int(len(fact_scores) * VETO_FACT_LOSS)]) if len(fact_scores) else 0.05
    veto = min(veto, plain_threshold / 2)

    vectors = vector_model().fit(x_durable[statements], y[statements])
    vectorizer, words = word_model(statements)
    terms = vectorizer.get_feature_names_out()
    _check_word_features(vectorizer, texts[:200])
    family = _family_models(texts_array[y == 1], x[y == 1, : -len(classifier.cue_features([""])[0])],
                            np.array(families)[y == 1])
    change = _change_head(vectorizer, corpus_dir, training_dir)
    question = _question_head([str(name) for name in family["families"]], corpus_dir, questions_dir)
    kept = oof >= np.where(is_plain, plain_threshold, threshold)
    print(f"{len(texts)} pieces ({int(y.sum())} durable), {len(family['families'])} families; durable "
          f"threshold {threshold:.2f}, plain first-person {plain_threshold:.2f} (out-of-fold: "
          f"{kept[y == 1].mean():.1%} of fact pieces kept, {_spurious(kept, groups):.1%} of none messages "
          f"spurious); veto below {veto:.3f}")
    return {
        "support_vectors": vectors.support_vectors_.astype(np.float32),
        "dual_coef": vectors.dual_coef_[0].astype(np.float32),
        "vector_intercept": np.float32(vectors.intercept_[0]),
        "gamma": np.float32(gamma),
        "calibration": np.array([scale, shift], dtype=np.float32),
        "word_terms": np.array(terms, dtype=str),
        "word_idf": vectorizer.idf_.astype(np.float32),
        "word_coef": words.coef_[0].astype(np.float32),
        "word_intercept": np.float32(words.intercept_[0]),
        "durable_threshold": np.float32(threshold),
        "plain_threshold": np.float32(plain_threshold),
        "veto_threshold": np.float32(veto),
        **family,
        "dev_hash": np.array(dev_hash(corpus_dir, training_dir, questions_dir)),
        **change,
        **question,
    }


def _family_models(pieces: np.ndarray, vectors: np.ndarray, families: np.ndarray) -> dict[str, np.ndarray]:
    """Which family a durable piece is of, from its vector and from its words, learnt from the pieces and
    from the memories the general path writes from them: services.apply compares an old memory's family
    with a new one's, and a model of first-person pieces alone misread memories ("The user lives in
    Hamburg." as a workplace; leaving one corpus part out at a time, 53% of memories' families right
    against 65% for these two)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from memoryapp import embeddings

    memories = [general.third_person(piece, "the user") for piece in pieces]
    texts = np.array([*pieces, *memories], dtype=object)
    labels = np.concatenate([families, families])
    vector_model = LogisticRegression(C=C_FAMILY, max_iter=5000).fit(
        np.vstack([vectors, embeddings.encode(memories).astype(np.float64)]), labels)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2).fit(texts)
    _check_word_features(vectorizer, list(texts[:200]))
    word_model = LogisticRegression(C=C_FAMILY_WORDS, max_iter=5000).fit(vectorizer.transform(texts), labels)
    assert list(word_model.classes_) == list(vector_model.classes_)
    return {
        "family_coef": vector_model.coef_.astype(np.float32),
        "family_intercept": vector_model.intercept_.astype(np.float32),
        "family_word_terms": np.array(vectorizer.get_feature_names_out(), dtype=str),
        "family_word_idf": vectorizer.idf_.astype(np.float32),
        "family_word_coef": word_model.coef_.astype(np.float16),  # half the file, three significant digits
        "family_word_intercept": word_model.intercept_.astype(np.float32),
        "families": np.array(vector_model.classes_, dtype=str),
    }


def _change_head(vectorizer, corpus_dir=None, training_dir=None) -> dict[str, np.ndarray]:
    """Whether a whole message says something changed: the dev change pairs' later statements against
    their first ones, every dev message that states a fact (but news of a change) and both sides of the
    continuation pairs. Its threshold lets CHANGE_FALSE_ALARM of those statements through, out of fold (folds by
    pair, so a pair's two sides are never split)."""
    from sklearn.linear_model import LogisticRegression

    from memoryapp import embeddings

    texts, labels, groups = [], [], []
    for number, pair in enumerate(_changes(corpus_dir, training_dir)):
        texts += [general.as_read(pair.after), general.as_read(pair.before)]
        labels += [1, 0]
        groups += [number, number]
    for number, message in enumerate(_messages(corpus_dir, training_dir)):
        # a message its writer tagged as news of a change ("not with Tom anymore", "Pescatarian these days") is
        # no plain statement, and with nothing before it no labelled change either: left out
        if message.family != "none" and "change" not in message.tags:
            texts.append(general.as_read(message.text))
            labels.append(0)
            groups.append(-1 - number)
    # News on a statement's topic that changes nothing ("Jess is terrified of the hoover", "also got a Micra now"):
    # statements too, which the threshold lets through no more often than the others
    for number, pair in enumerate(_continuations(corpus_dir, training_dir), start=len(groups)):
        texts += [general.as_read(pair.after), general.as_read(pair.before)]
        labels += [0, 0]
        groups += [number, number]
    y, groups = np.array(labels), np.array(groups)
    vectors = embeddings.encode(texts).astype(np.float64)  # as an episode's vector is computed at ingest
    words = vectorizer.transform(texts)

    def fitted(on: np.ndarray):
        return (LogisticRegression(C=C_CHANGE, max_iter=5000).fit(vectors[on], y[on]),
                LogisticRegression(C=C_CHANGE, max_iter=5000).fit(words[on], y[on]))

    def probability(models, rows: np.ndarray) -> np.ndarray:
        return (models[0].predict_proba(vectors[rows])[:, 1] + models[1].predict_proba(words[rows])[:, 1]) / 2

    folds = _folds(groups)
    oof = np.zeros(len(y))
    for fold in range(FOLDS):
        oof[folds == fold] = probability(fitted(folds != fold), folds == fold)
    statements = np.sort(oof[y == 0])
    threshold = float(statements[min(len(statements) - 1, int(len(statements) * (1 - CHANGE_FALSE_ALARM)))])
    print(f"change head: {int(y.sum())} changes, {int((y == 0).sum())} statements; threshold {threshold:.2f} "
          f"(out of fold: {(oof[y == 1] >= threshold).mean():.1%} of changes, "
          f"{(oof[y == 0] >= threshold).mean():.1%} of statements)")
    vector_model, word_model = fitted(np.ones(len(y), dtype=bool))
    return {
        "change_coef": vector_model.coef_[0].astype(np.float32),
        "change_intercept": np.float32(vector_model.intercept_[0]),
        "change_word_coef": word_model.coef_[0].astype(np.float32),
        "change_word_intercept": np.float32(word_model.intercept_[0]),
        "change_threshold": np.float32(threshold),
    }


def _question_head(families: list[str], corpus_dir=None, questions_dir=None) -> dict[str, np.ndarray]:
    """Which fact family a question asks about (selectors.search weighs a memory of that family up): every dev
    fact question in both persons, labelled with its message's family, and every dev question about something
    never said, with the family it is about; each as the search embeds it (the user's name, first person or
    "the user" addressed to "you"). Prints its out-of-fold accuracy (folds by message: a fact's two wordings
    never split)."""
    from sklearn.linear_model import LogisticRegression

    from memoryapp import embeddings
    from memoryapp.selectors.questions import third_person

    from .grammar import addressed

    folder = questions_dir or write_corpus.QUESTIONS_DIR
    family_of = {message.id: message.family for message in write_corpus.messages("dev", corpus_dir)}
    asked = [(item[person], family_of.get(item["message_id"], ""), item["message_id"])
             for _, _, item in write_corpus.jsonl_items(folder, "questions-*.dev.jsonl")
             for person in ("first_person", "third_person")]
    asked += [(item[person], item["family"], item["id"])
              for _, _, item in write_corpus.jsonl_items(folder, "unanswerable-dev.jsonl")
              for person in ("first_person", "third_person")]
    asked = [question for question in asked if question[1] in families]
    texts = []
    for number, (wording, _, _) in enumerate(asked):
        name = QUESTION_NAMES[number % len(QUESTION_NAMES)]
        texts.append(addressed(third_person(wording.replace("{name}", name), name), (name,)))
    vectors = embeddings.encode(texts).astype(np.float64)
    labels = np.array([family for _, family, _ in asked])
    folds = _folds(np.array([group for _, _, group in asked]))
    right = 0
    for fold in range(FOLDS):
        model = LogisticRegression(C=C_QUESTION, max_iter=5000).fit(vectors[folds != fold], labels[folds != fold])
        right += int((model.predict(vectors[folds == fold]) == labels[folds == fold]).sum())
    print(f"question head: {len(texts)} questions, {len(set(labels))} families; out of fold "
          f"{right / len(texts):.1%} of questions' families right")
    return question_head_arrays(LogisticRegression(C=C_QUESTION, max_iter=5000).fit(vectors, labels), families)


def question_head_arrays(model, families: list[str]) -> dict[str, np.ndarray]:
    """A fitted question head's weights, rows in the family model's order (`families`); a family no question asked
    about is never the asked one."""
    coef = np.zeros((len(families), model.coef_.shape[1]), dtype=np.float32)
    intercept = np.full(len(families), -30.0, dtype=np.float32)
    for row, family in enumerate(model.classes_):
        coef[families.index(family)] = model.coef_[row]
        intercept[families.index(family)] = model.intercept_[row]
    return {"question_coef": coef, "question_intercept": intercept}


def _folds(groups: np.ndarray) -> np.ndarray:
    """Each example's fold (of FOLDS, seeded): examples of one group always share theirs."""
    unique = np.unique(groups)
    fold_of = dict(zip(unique, np.random.default_rng(SEED).integers(0, FOLDS, len(unique)), strict=True))
    return np.array([fold_of[g] for g in groups])


def _writer_folds(writers: list[str]) -> np.ndarray:
    """Each example's fold (of FOLDS), writers dealt out in a seeded order so that the folds are even."""
    dealt = np.random.default_rng(SEED).permutation(sorted(set(writers)))
    fold_of = {writer: number % FOLDS for number, writer in enumerate(dealt)}
    return np.array([fold_of[writer] for writer in writers])


def _check_word_features(vectorizer, texts: list[str]) -> None:
    """The run-time word legs (classifier.word_features) must read texts as the vectorizer does."""
    index = {str(term): column for column, term in enumerate(vectorizer.get_feature_names_out())}
    expected = vectorizer.transform(texts).toarray()
    if not np.allclose(classifier.word_features(texts, index, vectorizer.idf_), expected, atol=1e-5):
        raise AssertionError("classifier.word_features no longer reads texts as TfidfVectorizer does")


def _spurious(kept: np.ndarray, groups: np.ndarray) -> float:
    none = groups < 0
    messages = np.unique(groups[none])
    return len(np.unique(groups[none & kept])) / len(messages) if len(messages) else 0.0


def _thresholds(oof: np.ndarray, y: np.ndarray, groups: np.ndarray, is_plain: np.ndarray) -> tuple[float, float]:
    """The (other, plain) thresholds that keep the most fact pieces with spurious at most SPURIOUS_TARGET."""
    best = (-1.0, 0.9, 0.9)
    grid = np.round(np.arange(0.05, 0.96, 0.01), 2)
    for other in grid:
        for plain_t in grid[grid <= other]:
            kept = oof >= np.where(is_plain, plain_t, other)
            if _spurious(kept, groups) <= SPURIOUS_TARGET:
                recall = kept[y == 1].mean()
                if recall > best[0]:
                    best = (recall, float(other), float(plain_t))
    return best[1], best[2]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(classifier.WEIGHTS_PATH))
    args = parser.parse_args(argv)
    np.savez_compressed(args.out, **train())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
    sys.path.insert(0, str(write_corpus.CORPUS_DIR.parents[2]))
    import django

    django.setup()
    main()
