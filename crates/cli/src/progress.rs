//! Progress bars on stderr that appear only once a phase has run for a second, and never when
//! stderr is not a terminal or with `--quiet`, so pipes, scripts and tests see clean output.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a phase runs before its bar is drawn.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The clock is read once per this many steps, so a step costs an add and a compare.
const CHECK_EVERY: u64 = 4096;

/// Whether bars may be drawn at all: stderr is a terminal and `--quiet` was not given.
#[must_use]
pub fn allowed(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// One phase's bar, hidden until the phase has run for [`SHOW_AFTER`].
pub struct Progress {
    bar: ProgressBar,
    allowed: bool,
    shown: bool,
    started: Instant,
    until_check: u64,
}

impl Progress {
    /// A bar for a phase of `len` steps (`None`: unknown), labelled `label`.
    #[must_use]
    pub fn new(label: &str, len: Option<u64>, unit: &str, allowed: bool) -> Self {
        let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden());
        let template = if len.is_some() {
            format!("{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{eta}} left)")
        } else {
            format!("{{msg}} {{spinner}} {{human_pos}} {unit}")
        };
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_owned());
        Self {
            bar,
            allowed,
            shown: false,
            started: Instant::now(),
            until_check: CHECK_EVERY,
        }
    }

    /// Advances by `steps`.
    #[inline]
    pub fn inc(&mut self, steps: u64) {
        self.bar.inc(steps);
        if self.shown || !self.allowed {
            return;
        }
        self.until_check = self.until_check.saturating_sub(steps.max(1));
        if self.until_check == 0 {
            self.until_check = CHECK_EVERY;
            if self.started.elapsed() >= SHOW_AFTER {
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
                self.bar.enable_steady_tick(Duration::from_millis(200));
                self.shown = true;
            }
        }
    }

    /// Ends the phase and wipes its bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
