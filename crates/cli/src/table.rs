//! Plain text tables: a left-aligned first column, right-aligned numbers, two spaces between.

use std::fmt::Write as _;

/// A table being built, row by row.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with `header` as its first row.
    #[must_use]
    pub fn new<S: ToString>(header: &[S]) -> Self {
        let mut table = Self::default();
        table.row(header);
        table
    }

    /// Appends a row.
    pub fn row<S: ToString>(&mut self, cells: &[S]) {
        self.rows
            .push(cells.iter().map(ToString::to_string).collect());
    }

    /// The table as lines, each ending in a newline, without trailing spaces.
    #[must_use]
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c == 0 {
                    let _ = write!(line, "{cell:<width$}", width = widths[0]);
                } else {
                    let _ = write!(line, "  {cell:>width$}", width = widths[c]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `part` as a percentage of `whole`, one decimal (`-` when `whole` is 0).
#[must_use]
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let mut table = Table::new(&["key", "admitted"]);
        table.row(&["alice", "3"]);
        table.row(&["b", "12"]);
        assert_eq!(
            table.render(),
            "key    admitted\nalice         3\nb            12\n"
        );
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(0, 0), "-");
    }
}
