//! The option table: one entry per option (name, default as text, doc,
//! whether CONFIG SET may change it, its parser and its renderer). The
//! single source for `--help`, CONFIG GET/SET and file and command-line
//! parsing. Its rooms hold the options by what they are about; the
//! table is theirs in this order (`CONFIG GET *`, `--help`).

use super::*;
use std::sync::LazyLock;

mod clients;
mod encodings;
mod persistence;
mod server;
mod tiering;
mod tls;

pub(in crate::services::config) static OPTIONS: LazyLock<Vec<OptionDef>> = LazyLock::new(|| {
    [
        server::OPTIONS,
        tls::OPTIONS,
        tiering::OPTIONS,
        persistence::OPTIONS,
        encodings::OPTIONS,
        clients::OPTIONS,
    ]
    .concat()
});
