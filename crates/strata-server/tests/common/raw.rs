//! `Raw`: a raw RESP connection for tests that check exact reply bytes or
//! whole reply frames.

use super::Server;
use std::io::{Read, Write};
use std::net::TcpStream;
use strata_protocol::{parse_frame, Frame, Limits, Parsed};

pub struct Raw {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    pub fn new(srv: &Server) -> Raw {
        Raw {
            s: srv.raw(),
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, args: &[&[u8]]) {
        let mut out = bytes::BytesMut::new();
        strata_protocol::write_request(&mut out, args);
        self.s.write_all(&out).unwrap();
    }

    /// Reads what is available into the buffer; false on EOF or timeout.
    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 16384];
        match self.s.read(&mut tmp) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// Reads one whole reply.
    pub fn frame(&mut self) -> Frame {
        loop {
            if let Parsed::Complete { value, consumed } =
                parse_frame(&self.buf, &Limits::default()).expect("valid RESP")
            {
                self.buf.drain(..consumed);
                return value;
            }
            assert!(self.fill(), "connection closed or timed out");
        }
    }

    /// Sends space-separated words, returns the reply.
    pub fn cmd(&mut self, words: &str) -> Frame {
        let args: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
        self.send(&args);
        self.frame()
    }

    /// Sends `args` and asserts the reply is exactly `want`.
    pub fn expect(&mut self, args: &[&[u8]], want: &[u8]) {
        self.send(args);
        while self.buf.len() < want.len() && self.fill() {}
        let got: Vec<u8> = self.buf.drain(..want.len().min(self.buf.len())).collect();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want),
            "reply to {:?}",
            args.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
        );
    }

    /// Sends space-separated words and asserts the exact reply bytes.
    pub fn w(&mut self, words: &str, want: &str) {
        let args: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
        self.expect(&args, want.as_bytes());
    }

    /// Whether the server closed this connection (EOF within the timeout).
    pub fn closed(&mut self) -> bool {
        let mut tmp = [0u8; 4096];
        loop {
            match self.s.read(&mut tmp) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        }
    }
}
