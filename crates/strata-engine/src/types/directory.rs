//! A collection as the engine's chunked-collection machinery sees it: its
//! directory (`parts::Dir`) if it is chunked, when it becomes chunked,
//! rebuilding one from a directory (recovery), and a copy without chunk
//! records for another key.

use super::{
    chunked, parts, stream, ChunkedStr, Collection, Hash, List, Set, Stream, ValueType, ZSet,
};

impl Collection {
    /// The directory of a chunked collection.
    pub fn dir(&self) -> Option<&dyn parts::Dir> {
        match self {
            Collection::Hash(h) => h.chunks().map(|c| c as &dyn parts::Dir),
            Collection::Set(s) => s.chunks().map(|c| c as &dyn parts::Dir),
            Collection::List(l) => l.chunked().map(|c| c as &dyn parts::Dir),
            Collection::ZSet(z) => z.chunked().map(|c| c as &dyn parts::Dir),
            Collection::Stream(s) => s.is_chunked().then_some(&**s as &dyn parts::Dir),
            Collection::Str(s) => Some(&**s as &dyn parts::Dir),
        }
    }

    pub fn dir_mut(&mut self) -> Option<&mut dyn parts::Dir> {
        match self {
            Collection::Hash(h) => h.chunks_mut().map(|c| c as &mut dyn parts::Dir),
            Collection::Set(s) => s.chunks_mut().map(|c| c as &mut dyn parts::Dir),
            Collection::List(l) => l.chunked_mut().map(|c| c as &mut dyn parts::Dir),
            Collection::ZSet(z) => z.chunked_mut().map(|c| c as &mut dyn parts::Dir),
            Collection::Stream(s) => {
                if s.is_chunked() {
                    Some(&mut **s as &mut dyn parts::Dir)
                } else {
                    None
                }
            }
            Collection::Str(s) => Some(&mut **s as &mut dyn parts::Dir),
        }
    }

    pub fn is_chunked(&self) -> bool {
        self.dir().is_some()
    }

    /// Whether this collection should be chunked: a list, or a hash, set
    /// or sorted set with the big encoding (a hash's or set's element order
    /// Redis leaves unspecified then), whose packed form passes
    /// `chunked::CHUNKED_AT`.
    pub fn wants_chunks(&self) -> bool {
        let candidate = match self {
            Collection::Hash(h) => h.big && !h.is_chunked(),
            Collection::Set(s) => s.big && !s.is_chunked(),
            Collection::List(l) => !l.is_chunked(),
            Collection::ZSet(z) => z.big && !z.is_chunked(),
            Collection::Stream(s) => !s.is_chunked(),
            Collection::Str(_) => false,
        };
        candidate && self.encoded_len() > chunked::CHUNKED_AT
    }

    /// Makes a collection that `wants_chunks` chunked, as incarnation `cid`.
    pub fn make_chunked(&mut self, cid: u64) {
        match self {
            Collection::Hash(h) => h.make_chunked(cid),
            Collection::Set(s) => s.make_chunked(cid),
            Collection::List(l) => l.make_chunked(cid),
            Collection::ZSet(z) => z.make_chunked(cid),
            Collection::Stream(s) => s.make_chunked(cid),
            Collection::Str(_) => {}
        }
    }

    /// A chunked collection of type `t` rebuilt from its directory
    /// (recovery; `span`: a list's head's positions, if known; `order`: a
    /// sorted set's order parts, `parts` being its member parts); None for
    /// types that are never chunked.
    #[allow(clippy::too_many_arguments)]
    pub fn from_directory(
        t: ValueType,
        big: bool,
        cid: u64,
        parts: &[parts::PartInfo],
        order: &[chunked::OrderInfo],
        head_loc: Option<crate::base::FlashLoc>,
        head_seq: u64,
        span: Option<(u64, u64)>,
    ) -> Option<Collection> {
        match t {
            ValueType::ZSet => Some(Collection::ZSet(ZSet::from_chunks(
                big,
                chunked::ChunkedZSet::from_infos(cid, parts, order, head_loc, head_seq),
            ))),
            ValueType::List => Some(Collection::List(List::from_chunks(
                chunked::ChunkedList::from_infos(cid, parts, head_loc, head_seq, span),
            ))),
            ValueType::Hash => Some(Collection::Hash(Hash::from_chunks(
                big,
                chunked::Chunked::from_infos(cid, parts, head_loc, head_seq),
            ))),
            ValueType::Set => Some(Collection::Set(Set::from_chunks(
                big,
                chunked::Chunked::from_infos(cid, parts, head_loc, head_seq),
            ))),
            // A stream's parts come with their bounds (`stream_from_directory`).
            ValueType::Stream => {
                let mut s = Stream::from_infos(cid, &[], &[], head_loc, head_seq);
                if let Some(span) = span {
                    parts::Dir::set_recovered_span(&mut s, span);
                }
                Some(Collection::Stream(Box::new(s)))
            }
            // Its length and flags come from its head (`bigstr` set_meta).
            ValueType::String => {
                let mut s = ChunkedStr::from_infos(cid, parts, head_loc, head_seq);
                if let Some(span) = span {
                    parts::Dir::set_recovered_span(&mut s, span);
                }
                Some(Collection::Str(Box::new(s)))
            }
        }
    }

    /// A copy with no chunk records: the same elements in one RAM map
    /// (every part must be in RAM), for a value going to another key (COPY,
    /// RENAME, MOVE), whose records name their key.
    pub fn detached(&self) -> Collection {
        match self {
            Collection::Hash(h) if h.is_chunked() => {
                let mut n = Hash::with_capacity(h.len());
                for (k, v) in h.iter() {
                    n.insert(k, v);
                }
                n.big = h.big;
                Collection::Hash(n)
            }
            Collection::List(l) if l.is_chunked() => {
                let mut n = List::default();
                for e in l.iter() {
                    n.push_back(e.into());
                }
                Collection::List(n)
            }
            Collection::Set(s) if s.is_chunked() => {
                let mut n = Set::with_capacity(s.len());
                for m in s.iter() {
                    n.insert(m);
                }
                n.big = s.big;
                Collection::Set(n)
            }
            Collection::ZSet(z) if z.is_chunked() => {
                let mut n = ZSet::default();
                for (m, s) in z.iter() {
                    n.insert(m, s);
                }
                n.big = z.big;
                Collection::ZSet(n)
            }
            Collection::Stream(s) if s.is_chunked() => Collection::Stream(Box::new(s.detached())),
            c => c.clone(),
        }
    }

    /// A chunked stream rebuilt from its directory (recovery): its parts
    /// with their bounds, and its groups' PEL parts (read by recovery).
    pub fn stream_from_directory(
        cid: u64,
        parts: &[stream::StreamPartInfo],
        pel: &[parts::PartInfo],
        head_loc: Option<crate::base::FlashLoc>,
        head_seq: u64,
    ) -> Collection {
        Collection::Stream(Box::new(Stream::from_infos(
            cid, parts, pel, head_loc, head_seq,
        )))
    }

    /// A write is about to change the collection through `&mut` (a
    /// chunked stream's head fields may change with it).
    pub fn will_change(&mut self) {
        match self {
            Collection::Stream(s) => s.will_change(),
            Collection::Str(s) => s.will_change(),
            _ => {}
        }
    }
}
