//! The engine's persistence API for the server: durability waits (appendfsync
//! always), SAVE / BGSAVE / automatic checkpoints, clean shutdown, and the
//! figures of INFO persistence. The mechanisms live in `journal`,
//! `checkpoint` and `recovery`.

use crate::log::checkpoint;
use crate::log::journal::{FsyncPolicy, LogStatus};
use crate::log::recovery::{self, RecoveryReport, RunState};
use crate::stats::Stats;
use crate::{Engine, Inner};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Everything INFO persistence shows.
#[derive(Clone, Debug)]
pub struct PersistInfo {
    pub appendonly: bool,
    pub fsync: FsyncPolicy,
    pub status: LogStatus,
    pub error: Option<String>,
    pub loading: bool,
    pub journal_queued: u64,
    pub journal_records: u64,
    pub journal_record_bytes: u64,
    /// Of the records, change records (`types::changes`) and their bytes.
    pub journal_change_records: u64,
    pub journal_change_bytes: u64,
    pub journal_batches: u64,
    /// Batches written atomically (they held a transaction, a script or a
    /// multi-key command).
    pub journal_atomic_batches: u64,
    pub fsyncs: u64,
    pub fsync_micros: u64,
    pub last_fsync_ms: u64,
    pub checkpoint_running: bool,
    pub last_checkpoint_ms: u64,
    pub last_checkpoint_entries: u64,
    pub last_checkpoint_bytes: u64,
    pub last_checkpoint_duration_ms: u64,
    pub last_checkpoint_error: Option<String>,
    pub checkpoints: u64,
    pub log_bytes_since_checkpoint: u64,
    /// Changes noted by the journal since the last checkpoint began.
    pub changes_since_checkpoint: u64,
    pub recovery: RecoveryReport,
}

/// How SHUTDOWN treats the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownSave {
    /// Checkpoint (and, with appendonly no, write RAM-only values first).
    Save,
    /// No checkpoint: with appendonly yes the log is still drained and
    /// synced (nothing acknowledged is lost); with appendonly no the data
    /// are not kept.
    NoSave,
}

impl Engine {
    /// The ticket of the last change noted so far; a write command's change
    /// is durable once `wait_durable` of a ticket taken after it returns.
    pub fn journal_ticket(&self) -> u64 {
        self.inner.journal.last_ticket()
    }

    /// Whether write acknowledgements must wait for `wait_durable`
    /// (appendonly yes with appendfsync always).
    pub fn acks_wait_for_fsync(&self) -> bool {
        self.inner.journal.enabled && self.inner.journal.fsync_policy() == FsyncPolicy::Always
    }

    /// Waits until the changes up to `ticket` are durable; Err if the log
    /// cannot be written (the write's outcome is then unknown).
    pub async fn wait_durable(&self, ticket: u64) -> Result<(), String> {
        self.inner.journal.wait_durable(ticket).await
    }

    pub fn set_fsync_policy(&self, p: FsyncPolicy) {
        self.inner.journal.set_fsync_policy(p);
    }

    /// Why writes are refused, if they are (a full log, or a failed write
    /// or fsync).
    pub fn log_error(&self) -> Option<String> {
        match self.inner.journal.status() {
            LogStatus::Ok => None,
            _ => Some(
                self.inner
                    .journal
                    .error()
                    .unwrap_or_else(|| "the flash log cannot be written".into()),
            ),
        }
    }

    /// SAVE: a checkpoint now, on the calling thread.
    pub fn save(&self) -> Result<checkpoint::Done, String> {
        self.inner.run_checkpoint()
    }

    /// BGSAVE: a checkpoint on its own thread. Err if one is running.
    pub fn bgsave(&self) -> Result<(), String> {
        self.inner.clone().spawn_checkpoint()
    }

    /// Clean shutdown: drain the journal, sync, checkpoint (per `save`) and
    /// mark the run clean. Call when no more commands run.
    pub fn shutdown(&self, save: ShutdownSave) -> Result<(), String> {
        let inner = &self.inner;
        while inner.durability.persist.running.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if inner.journal.enabled {
            let last = inner.journal.last_ticket();
            inner.journal.kick();
            while inner.journal.written_ticket() < last && inner.journal.status() == LogStatus::Ok {
                inner.journal.kick();
                std::thread::sleep(Duration::from_millis(1));
            }
            if inner.journal.status() == LogStatus::Poisoned {
                return Err(inner
                    .journal
                    .error()
                    .unwrap_or_else(|| "the journal is poisoned".into()));
            }
        }
        let clean = match save {
            ShutdownSave::Save => {
                inner.run_checkpoint()?;
                true
            }
            ShutdownSave::NoSave => {
                let mut w = inner.flash.writer.lock();
                w.flush().map_err(|e| e.to_string())?;
                w.sync().map_err(|e| e.to_string())?;
                inner.journal.enabled
            }
        };
        recovery::write_state(
            inner.flash.table.dir(),
            RunState {
                appendonly: inner.journal.enabled,
                clean,
            },
        )
        .map_err(|e| format!("cannot write the state file: {e}"))
    }

    /// The figures of INFO persistence.
    pub fn persist_info(&self) -> PersistInfo {
        let inner = &self.inner;
        let j = &inner.journal;
        let p = &inner.durability.persist;
        PersistInfo {
            appendonly: j.enabled,
            fsync: j.fsync_policy(),
            status: j.status(),
            error: j.error(),
            loading: self.is_loading(),
            journal_queued: j.queued() as u64,
            journal_records: Stats::get(&j.records),
            journal_record_bytes: Stats::get(&j.record_bytes),
            journal_change_records: Stats::get(&j.change_records),
            journal_change_bytes: Stats::get(&j.change_bytes),
            journal_batches: Stats::get(&j.batches),
            journal_atomic_batches: Stats::get(&j.atomic_batches),
            fsyncs: Stats::get(&j.fsyncs),
            fsync_micros: Stats::get(&j.fsync_micros),
            last_fsync_ms: Stats::get(&j.last_fsync_ms),
            checkpoint_running: p.running.load(Relaxed),
            last_checkpoint_ms: Stats::get(&p.last_checkpoint_ms),
            last_checkpoint_entries: Stats::get(&p.last_checkpoint_entries),
            last_checkpoint_bytes: Stats::get(&p.last_checkpoint_bytes),
            last_checkpoint_duration_ms: Stats::get(&p.last_checkpoint_duration_ms),
            last_checkpoint_error: p.last_error.lock().clone(),
            checkpoints: Stats::get(&p.checkpoints),
            log_bytes_since_checkpoint: inner.log_bytes_since_checkpoint(),
            changes_since_checkpoint: j
                .last_ticket()
                .saturating_sub(p.checkpoint_ticket.load(Relaxed)),
            recovery: inner.durability.recovery.lock().clone(),
        }
    }
}

impl Inner {
    fn log_bytes_since_checkpoint(&self) -> u64 {
        self.stats
            .device
            .log()
            .saturating_sub(self.durability.persist.checkpoint_log_bytes.load(Relaxed))
    }

    /// Runs a checkpoint on this thread unless one is running.
    fn run_checkpoint(&self) -> Result<checkpoint::Done, String> {
        if self
            .durability
            .persist
            .running
            .compare_exchange(false, true, Relaxed, Relaxed)
            .is_err()
        {
            return Err("a checkpoint is already in progress".into());
        }
        // With the journal on, RAM-only values are in the log (or queued).
        let r = checkpoint::take(self, !self.journal.enabled);
        *self.durability.persist.last_error.lock() = r.as_ref().err().cloned();
        if let Err(e) = &r {
            tracing::error!("checkpoint failed: {e}");
        }
        self.durability.persist.running.store(false, Relaxed);
        r
    }

    fn spawn_checkpoint(self: Arc<Self>) -> Result<(), String> {
        if self.durability.persist.running.load(Relaxed) {
            return Err("a checkpoint is already in progress".into());
        }
        std::thread::Builder::new()
            .name("strata-checkpoint".into())
            .spawn(move || {
                let _ = self.run_checkpoint();
            })
            .map(|_| ())
            .map_err(|e| format!("cannot start the checkpoint thread: {e}"))
    }

    /// Starts a checkpoint when the log grew enough since the last one
    /// (appendonly yes): at least `checkpoint_interval` bytes and twice the
    /// last checkpoint's size, so checkpoints cost a bounded share of the
    /// writes and the log to replay at restart stays bounded.
    pub(crate) fn maybe_checkpoint(&self) {
        if !self.journal.enabled || self.durability.checkpoint_interval == 0 {
            return;
        }
        let due = self
            .durability
            .checkpoint_interval
            .max(2 * self.durability.persist.last_checkpoint_bytes.load(Relaxed));
        if self.log_bytes_since_checkpoint() < due || self.durability.persist.running.load(Relaxed)
        {
            return;
        }
        // The background thread holds only a plain reference; a short
        // checkpoint thread needs the Arc, which the engine keeps in
        // `self_ref`.
        if let Some(me) = self.life.self_ref.lock().upgrade() {
            let _ = me.spawn_checkpoint();
        }
    }
}
