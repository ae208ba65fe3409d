//! Made-up text: names, words and identifiers. Pronounceable pseudo-words from a
//! fixed vocabulary drawn with Zipf frequencies, so generated hours compress about
//! like real ones (random letters would not), while no real text is ever used.

use std::sync::OnceLock;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::skew::Zipf;

const ONSETS: [&str; 20] = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "st", "tr"];
const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "y"];
const CODAS: [&str; 8] = ["", "", "", "n", "r", "s", "t", "l"];
/// Words in the text vocabulary; fixed, so text depends only on the event's RNG.
const VOCABULARY: usize = 4096;

/// A pronounceable word of about `syllables` syllables.
pub fn word(rng: &mut impl Rng, syllables: usize) -> String {
    let mut w = String::new();
    for _ in 0..syllables.max(1) {
        w.push_str(ONSETS[rng.random_range(0..ONSETS.len())]);
        w.push_str(VOWELS[rng.random_range(0..VOWELS.len())]);
        w.push_str(CODAS[rng.random_range(0..CODAS.len())]);
    }
    w
}

/// A GitHub-style login or repository name of about `len` characters.
pub fn name(rng: &mut impl Rng, len: usize) -> String {
    let mut n = word(rng, 1);
    while n.len() < len {
        // Real names mix words, dashes and digits.
        match rng.random_range(0..10) {
            0 => n.push('-'),
            1 => n.push(char::from(b'0' + rng.random_range(0..10u8))),
            _ => {}
        }
        n.push_str(&word(rng, 1));
    }
    n.truncate(len.max(2));
    n.trim_end_matches('-').to_string()
}

struct Vocabulary {
    words: Vec<String>,
    pick: Zipf,
}

fn vocabulary() -> &'static Vocabulary {
    static VOCAB: OnceLock<Vocabulary> = OnceLock::new();
    VOCAB.get_or_init(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(0x67_6862_656e_6368);
        let words = (0..VOCABULARY).map(|i| word(&mut rng, 1 + i % 3)).collect();
        Vocabulary { words, pick: Zipf::new(VOCABULARY, 1.0) }
    })
}

/// Appends sentence-like text of exactly `len` bytes (ASCII) to `out`.
pub fn push_text(out: &mut String, rng: &mut impl Rng, len: usize) {
    let vocab = vocabulary();
    let end = out.len() + len;
    while out.len() < end {
        out.push_str(&vocab.words[vocab.pick.sample(rng)]);
        out.push(if rng.random_range(0..12) == 0 { '.' } else { ' ' });
    }
    out.truncate(end);
}

pub fn text(rng: &mut impl Rng, len: usize) -> String {
    let mut s = String::with_capacity(len);
    push_text(&mut s, rng, len);
    s
}

/// `len` lowercase hex digits, as in git commit ids.
pub fn hex(rng: &mut impl Rng, len: usize) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    (0..len).map(|_| char::from(DIGITS[rng.random_range(0..16)])).collect()
}

/// Who and what an event is about: fills the `*` of templates.
pub struct Context<'a> {
    pub login: &'a str,
    pub owner: &'a str,
    pub repo: &'a str,
    pub created_at: &'a str,
}

/// Fills a template made by `shape::template`: two `*` in a row are the event's
/// repository (`owner/name`), a single `*` the actor's login, `{n}` a number and
/// `{sha}` a commit id.
pub fn fill_template(template: &str, ctx: &Context, rng: &mut impl Rng) -> String {
    let segments: Vec<&str> = template.split('/').collect();
    let mut out = Vec::with_capacity(segments.len());
    let mut i = 0;
    while i < segments.len() {
        let seg = segments[i];
        if seg == "*" && segments.get(i + 1) == Some(&"*") {
            out.push(ctx.owner.to_string());
            out.push(ctx.repo.to_string());
            i += 2;
            continue;
        }
        out.push(if seg == "*" {
            ctx.login.to_string()
        } else if seg == "{sha}" {
            hex(rng, 40)
        } else if seg.contains("{n}") {
            seg.replace("{n}", &rng.random_range(1..100_000u32).to_string())
        } else {
            seg.to_string()
        });
        i += 1;
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_the_exact_length_and_is_ascii() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for len in [0, 1, 7, 500] {
            let t = text(&mut rng, len);
            assert_eq!(t.len(), len);
            assert!(t.is_ascii());
        }
    }

    #[test]
    fn templates_name_the_events_repository_and_actor() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let ctx = Context { login: "bob", owner: "acme", repo: "rocket", created_at: "2015-01-01T00:00:00Z" };
        let url = fill_template("https://api.github.com/repos/*/*/issues/{n}", &ctx, &mut rng);
        assert!(url.starts_with("https://api.github.com/repos/acme/rocket/issues/"), "{url}");
        assert_eq!(fill_template("https://github.com/*", &ctx, &mut rng), "https://github.com/bob");
    }
}
