//! The terminal UI: an [`App`] holds the last two snapshots and what the
//! user chose (mode, sort, filter, drill-down, delay, selection); keys
//! change it ([`App::on_key`], a pure function of the state, tested
//! without a terminal), [`draw`] renders it (tested in ratatui's
//! `TestBackend`), and [`run`] is the loop between them: a refresh when the
//! delay is up, keys in between.
//!
//! Screen, top to bottom: the summary lines, a status bar (mode, sort,
//! filter, delay), the table (header, rows, the selected one highlighted),
//! and a line for prompts and messages. `h` lays the help over it, `o` the
//! sort column picker.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{
    Block, Cell, Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState,
};
use ratatui::Frame;

use crate::filter::Filter;
use crate::model::{build_view, Field, Mode, View, ViewOptions};
use crate::source::{Snapshot, Source};
use crate::{summary, TopError};

/// The shortest and longest delay `d` accepts, in seconds.
const DELAY_RANGE: (f64, f64) = (0.1, 86_400.0);
/// Widest a key or name column is drawn (the rest is cut; `--batch`
/// prints it whole).
const MAX_COLUMN_WIDTH: usize = 40;

/// What the keyboard is typing into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Keys are commands.
    Normal,
    /// The help screen is up; any key closes it.
    Help,
    /// Picking the sort column (index into the mode's columns).
    Sort(usize),
    /// Typing a filter.
    Filter(String),
    /// Typing a delay in seconds.
    Delay(String),
}

/// What the loop should do after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing more than redraw.
    None,
    /// Refresh now.
    Refresh,
    /// Leave.
    Quit,
}

/// The UI's state.
#[derive(Debug)]
pub struct App {
    options: ViewOptions,
    delay: Duration,
    previous: Option<Snapshot>,
    current: Snapshot,
    view: View,
    table: TableState,
    /// Rows the table showed at the last draw (PageUp/PageDown move by it).
    page_rows: usize,
    input: Input,
    /// A message for the bottom line, and whether it is an error.
    message: Option<(String, bool)>,
    /// The mode Esc goes back to from a drill-down.
    drilled_from: Option<Mode>,
}

impl App {
    /// The UI over a first snapshot.
    pub fn new(options: ViewOptions, delay: Duration, first: Snapshot) -> App {
        let view = build_view(None, &first, &options);
        let mut app = App {
            options,
            delay,
            previous: None,
            current: first,
            view,
            table: TableState::default(),
            page_rows: 10,
            input: Input::Normal,
            message: None,
            drilled_from: None,
        };
        app.rebuild();
        app
    }

    /// Takes a new snapshot in; rates come from it and the one before.
    pub fn refresh(&mut self, snapshot: Snapshot) {
        self.previous = Some(std::mem::replace(&mut self.current, snapshot));
        if self.message.as_ref().is_some_and(|(_, error)| *error) {
            self.message = None;
        }
        self.rebuild();
    }

    /// A refresh failed: the last numbers stay, the error is shown.
    pub fn refresh_failed(&mut self, error: &TopError) {
        self.message = Some((format!("refresh failed: {error}"), true));
    }

    /// The table as it stands.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The view options as the user has set them.
    pub fn options(&self) -> &ViewOptions {
        &self.options
    }

    /// The time between refreshes.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// What the keyboard types into.
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// The selected row.
    pub fn selected(&self) -> Option<usize> {
        self.table.selected()
    }

    fn rebuild(&mut self) {
        self.view = build_view(self.previous.as_ref(), &self.current, &self.options);
        let rows = self.view.records.len();
        let selected = match self.table.selected() {
            _ if rows == 0 => None,
            Some(i) => Some(i.min(rows - 1)),
            None => Some(0),
        };
        self.table.select(selected);
    }

    fn set_mode(&mut self, mode: Mode) {
        self.options.mode = mode;
        self.options.drill = None;
        self.drilled_from = None;
        self.table.select(Some(0));
        self.rebuild();
    }

    fn set_sort(&mut self, field: Field) {
        self.options.sort = field;
        self.options.descending = field.descending_by_default();
        self.rebuild();
    }

    fn move_selection(&mut self, by: isize) {
        let rows = self.view.records.len();
        if rows == 0 {
            return;
        }
        let now = self.table.selected().unwrap_or(0) as isize;
        let next = (now + by).clamp(0, rows as isize - 1);
        self.table.select(Some(next as usize));
    }

    /// Handles one key; see the help screen for what each does.
    pub fn on_key(&mut self, key: KeyEvent) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        match std::mem::replace(&mut self.input, Input::Normal) {
            Input::Normal => self.on_command(key),
            Input::Help => Action::None,
            Input::Sort(i) => {
                self.on_sort_pick(i, key.code);
                Action::None
            }
            Input::Filter(text) => {
                self.on_filter_key(text, key.code);
                Action::None
            }
            Input::Delay(text) => {
                self.on_delay_key(text, key.code);
                Action::None
            }
        }
    }

    fn on_command(&mut self, key: KeyEvent) -> Action {
        let page = self.page_rows.max(1) as isize;
        match key.code {
            KeyCode::Char('q') => return Action::Quit,
            KeyCode::Char('h') | KeyCode::Char('?') => self.input = Input::Help,
            KeyCode::Char('m') => self.set_mode(self.options.mode.next()),
            KeyCode::Char('o') | KeyCode::Char('O') => {
                let fields = &self.view.fields;
                let (sort, _) = self.options.effective_sort(fields);
                let at = fields.iter().position(|f| *f == sort).unwrap_or(0);
                self.input = Input::Sort(at);
            }
            KeyCode::Char('<') | KeyCode::Char('>') => {
                let fields = self.view.fields.clone();
                let (sort, _) = self.options.effective_sort(&fields);
                let at = fields.iter().position(|f| *f == sort).unwrap_or(0);
                let next = if key.code == KeyCode::Char('<') {
                    at.checked_sub(1).unwrap_or(fields.len() - 1)
                } else {
                    (at + 1) % fields.len()
                };
                self.set_sort(fields[next]);
            }
            KeyCode::Char('R') => {
                let (sort, descending) = self.options.effective_sort(&self.view.fields);
                self.options.sort = sort;
                self.options.descending = !descending;
                self.rebuild();
            }
            KeyCode::Char('d') => {
                self.input = Input::Delay(format!("{}", self.delay.as_secs_f64()));
            }
            KeyCode::Char('/') => {
                self.input = Input::Filter(self.options.filter.text().to_string());
            }
            KeyCode::Char(' ') => return Action::Refresh,
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::PageUp => self.move_selection(-page),
            KeyCode::PageDown => self.move_selection(page),
            KeyCode::Home => self.move_selection(isize::MIN / 2),
            KeyCode::End => self.move_selection(isize::MAX / 2),
            KeyCode::Enter => self.drill_down(),
            KeyCode::Esc => match self.drilled_from.take() {
                Some(mode) => self.set_mode(mode),
                None => self.message = None,
            },
            _ => {}
        }
        Action::None
    }

    fn drill_down(&mut self) {
        let target = self
            .table
            .selected()
            .and_then(|i| self.view.records.get(i))
            .and_then(|r| r.drill.clone());
        match target {
            Some(drill) => {
                let from = self.options.mode;
                self.options.mode = Mode::Region;
                self.options.drill = Some(drill);
                self.drilled_from = Some(from);
                self.table.select(Some(0));
                self.rebuild();
            }
            None => {
                self.message = Some((
                    "Enter drills into the regions of a table (table mode) or a server (server mode)"
                        .into(),
                    false,
                ));
            }
        }
    }

    fn on_sort_pick(&mut self, at: usize, code: KeyCode) {
        let count = self.view.fields.len();
        match code {
            KeyCode::Up | KeyCode::Char('k') => self.input = Input::Sort(at.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => {
                self.input = Input::Sort((at + 1).min(count.saturating_sub(1)));
            }
            KeyCode::Enter => {
                if let Some(f) = self.view.fields.get(at).copied() {
                    self.set_sort(f);
                }
            }
            KeyCode::Esc => {}
            _ => self.input = Input::Sort(at),
        }
    }

    fn on_filter_key(&mut self, mut text: String, code: KeyCode) {
        match code {
            KeyCode::Enter => match Filter::parse(&text) {
                Ok(filter) => {
                    self.options.filter = filter;
                    self.table.select(Some(0));
                    self.rebuild();
                }
                Err(e) => self.message = Some((e, true)),
            },
            KeyCode::Esc => {}
            KeyCode::Backspace => {
                text.pop();
                self.input = Input::Filter(text);
            }
            KeyCode::Char(c) => {
                text.push(c);
                self.input = Input::Filter(text);
            }
            _ => self.input = Input::Filter(text),
        }
    }

    fn on_delay_key(&mut self, mut text: String, code: KeyCode) {
        match code {
            KeyCode::Enter => match text.trim().parse::<f64>() {
                Ok(s) if (DELAY_RANGE.0..=DELAY_RANGE.1).contains(&s) => {
                    self.delay = Duration::from_secs_f64(s);
                }
                _ => {
                    self.message = Some((
                        format!(
                            "the delay is a number of seconds from {} to {}, not {text:?}",
                            DELAY_RANGE.0, DELAY_RANGE.1
                        ),
                        true,
                    ));
                }
            },
            KeyCode::Esc => {}
            KeyCode::Backspace => {
                text.pop();
                self.input = Input::Delay(text);
            }
            KeyCode::Char(c) if c.is_ascii_digit() || c == '.' => {
                text.push(c);
                self.input = Input::Delay(text);
            }
            _ => self.input = Input::Delay(text),
        }
    }
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let lines = summary::lines(&app.current, &app.view);
    let [top, status, body, bottom] = Layout::vertical([
        Constraint::Length(lines.len() as u16),
        Constraint::Length(1),
        Constraint::Min(2),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(
        Paragraph::new(lines.into_iter().map(Line::from).collect::<Vec<_>>()),
        top,
    );
    frame.render_widget(
        Paragraph::new(status_line(app)).style(Style::default().add_modifier(Modifier::REVERSED)),
        status,
    );
    draw_table(frame, app, body);
    let (text, style) = match (&app.input, &app.message) {
        (Input::Filter(t), _) => (format!("Filter: {t}_"), Style::default()),
        (Input::Delay(t), _) => (format!("Delay (seconds): {t}_"), Style::default()),
        (_, Some((m, true))) => (m.clone(), Style::default().fg(Color::Red)),
        (_, Some((m, false))) => (m.clone(), Style::default()),
        _ => (String::new(), Style::default()),
    };
    frame.render_widget(Paragraph::new(text).style(style), bottom);
    match app.input {
        Input::Help => draw_help(frame, app),
        Input::Sort(at) => draw_sort_picker(frame, app, at),
        _ => {}
    }
}

fn status_line(app: &App) -> String {
    let o = &app.options;
    let mut s = format!("Mode: {}", o.mode.name());
    if let Some(d) = &o.drill {
        s.push_str(&format!(" ({}; Esc: back)", d.describe()));
    }
    let (sort, descending) = o.effective_sort(&app.view.fields);
    s.push_str(&format!(
        " | Sort: {} {}",
        sort.header(),
        if descending { "desc" } else { "asc" }
    ));
    if !o.filter.is_empty() {
        s.push_str(&format!(" | Filter: {}", o.filter.text()));
    }
    s.push_str(&format!(
        " | Rows: {} | Delay: {}s | h: help  q: quit",
        app.view.records.len(),
        app.delay.as_secs_f64()
    ));
    s
}

fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
    let view = &app.view;
    let texts: Vec<Vec<String>> = view
        .records
        .iter()
        .map(|r| {
            view.fields
                .iter()
                .map(|f| r.get(*f).map(|v| v.display()).unwrap_or_default())
                .collect()
        })
        .collect();
    let widths: Vec<Constraint> = view
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let widest = texts
                .iter()
                .map(|r| r[i].chars().count())
                .chain([f.header().len()])
                .max()
                .unwrap_or(0)
                .min(MAX_COLUMN_WIDTH);
            Constraint::Length(widest as u16)
        })
        .collect();
    let (sort, _) = app.options.effective_sort(&view.fields);
    let cell = |field: &Field, text: String| {
        let line = Line::from(text);
        Cell::from(if field.is_numeric() {
            line.alignment(Alignment::Right)
        } else {
            line
        })
    };
    let header = Row::new(view.fields.iter().map(|f| {
        let style = if *f == sort {
            Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
        } else {
            Style::default().add_modifier(Modifier::BOLD)
        };
        cell(f, f.header().to_string()).style(style)
    }));
    let rows = texts
        .into_iter()
        .map(|r| Row::new(view.fields.iter().zip(r).map(|(f, t)| cell(f, t))));
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(2)
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    app.page_rows = usize::from(area.height.saturating_sub(1));
    frame.render_stateful_widget(table, area, &mut app.table);
}

fn draw_help(frame: &mut Frame, app: &App) {
    let mut lines: Vec<Line> = [
        "q          quit",
        "h or ?     this help (any key closes it)",
        "m          next mode: region, table, server",
        "o          pick the sort column; < > previous or next column",
        "R          reverse the sort order",
        "d          set the delay between refreshes (seconds)",
        "/          filter rows: TABLE==t  #REQ/S>10  !RS=host  word",
        "space      refresh now",
        "arrows, j k, PageUp, PageDown, Home, End   move the selection",
        "Enter      table or server mode: its regions; Esc goes back",
        "",
        "Columns of this mode:",
    ]
    .into_iter()
    .map(Line::from)
    .collect();
    for f in &app.view.fields {
        lines.push(Line::from(format!(
            "{:<10} {}",
            f.header(),
            f.description()
        )));
    }
    let height = (lines.len() + 2) as u16;
    let area = frame
        .area()
        .centered(Constraint::Percentage(80), Constraint::Length(height));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" basalt top: keys ")),
        area,
    );
}

fn draw_sort_picker(frame: &mut Frame, app: &App, at: usize) {
    let items: Vec<ListItem> = app
        .view
        .fields
        .iter()
        .map(|f| ListItem::new(format!("{:<10} {}", f.header(), f.description())))
        .collect();
    let height = (items.len() + 2) as u16;
    let area = frame
        .area()
        .centered(Constraint::Length(70), Constraint::Length(height));
    let mut state = ListState::default().with_selected(Some(at));
    frame.render_widget(Clear, area);
    frame.render_stateful_widget(
        List::new(items)
            .block(Block::bordered().title(" sort by (Enter picks, Esc cancels) "))
            .highlight_style(Style::default().add_modifier(Modifier::REVERSED)),
        area,
        &mut state,
    );
}

/// Runs the UI until `q` (or `iterations` refreshes, counting the first
/// snapshot `app` was made with). The terminal is restored however it
/// ends; a failed refresh is shown and the next one tried after the delay.
pub fn run(source: &mut dyn Source, mut app: App, iterations: Option<u64>) -> Result<(), TopError> {
    let mut terminal = ratatui::try_init().map_err(TopError::Terminal)?;
    let outcome = event_loop(&mut terminal, source, &mut app, iterations);
    let restored = ratatui::try_restore().map_err(TopError::Terminal);
    outcome.and(restored)
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    source: &mut dyn Source,
    app: &mut App,
    iterations: Option<u64>,
) -> Result<(), TopError> {
    let mut refreshed = 1u64;
    let mut last = Instant::now();
    loop {
        terminal
            .draw(|frame| draw(frame, app))
            .map_err(TopError::Terminal)?;
        let due = last + app.delay;
        let wait = due.saturating_duration_since(Instant::now());
        let mut refresh = wait.is_zero();
        if !refresh && event::poll(wait).map_err(TopError::Terminal)? {
            if let Event::Key(key) = event::read().map_err(TopError::Terminal)? {
                if key.kind == KeyEventKind::Press {
                    match app.on_key(key) {
                        Action::Quit => return Ok(()),
                        Action::Refresh => refresh = true,
                        Action::None => {}
                    }
                }
            }
        }
        if refresh {
            if iterations.is_some_and(|n| refreshed >= n) {
                return Ok(());
            }
            match source.snapshot() {
                Ok(s) => app.refresh(s),
                Err(e) => app.refresh_failed(&e),
            }
            refreshed += 1;
            last = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::sample;
    use crate::model::Drill;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn press(app: &mut App, keys: &str) {
        for c in keys.chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
    }

    /// Two refreshes: region t2 the busiest, then t0, u0, t1.
    fn app() -> App {
        let mut app = App::new(
            ViewOptions::default(),
            Duration::from_secs(3),
            sample(0, [0, 0, 0, 0]),
        );
        app.refresh(sample(1_000, [10, 40, 1, 90]));
        app
    }

    fn screen(app: &mut App, width: u16, height: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, app)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    fn regions_in_order(app: &App) -> Vec<String> {
        app.view()
            .records
            .iter()
            .map(|r| {
                r.get(Field::Region)
                    .map(|v| v.display())
                    .unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn the_screen_shows_the_summary_the_header_and_rows_busiest_first() {
        let mut app = app();
        let lines = screen(&mut app, 200, 20);
        assert!(lines[0].starts_with("basalt top "), "{lines:#?}");
        assert!(
            lines[3].starts_with("Aggregate requests: 211.0/s"),
            "{lines:#?}"
        );
        assert!(
            lines[4].starts_with("Mode: region | Sort: #REQ/S desc"),
            "{lines:#?}"
        );
        let header = &lines[5];
        let mut at = 0;
        for h in [
            "NAMESPACE",
            "TABLE",
            "REGION",
            "#REQ/S",
            "#READ/S",
            "#FREAD/S",
            "#WRITE/S",
        ]
        .into_iter()
        .chain([
            "SF",
            "#SF",
            "MEMSTORE",
            "%COMP",
            "LASTMCOMP",
            "SKEY",
            "EKEY",
        ]) {
            let found = header[at..]
                .find(h)
                .unwrap_or_else(|| panic!("{h} in {header}"));
            at += found + h.len();
        }
        let order: Vec<usize> = ["t2", "t0", "u0", "t1"]
            .iter()
            .map(|r| {
                lines
                    .iter()
                    .position(|l| l.contains(&format!("  {r}  ")))
                    .unwrap_or_else(|| panic!("{r} on screen: {lines:#?}"))
            })
            .collect();
        assert_eq!(order, [6, 7, 8, 9], "{lines:#?}");
        assert!(lines[6].contains("135.0"), "{}", lines[6]);
    }

    #[test]
    fn m_cycles_the_modes_and_table_mode_draws_one_row_per_table() {
        let mut app = app();
        press(&mut app, "m");
        assert_eq!(app.options().mode, Mode::Table);
        let lines = screen(&mut app, 160, 12);
        assert!(
            lines[5].starts_with("NAMESPACE  TABLE  #REGION  #REQ/S"),
            "{lines:#?}"
        );
        assert!(
            lines[6].starts_with("default    t            3"),
            "{lines:#?}"
        );
        assert!(
            lines[7].starts_with("ns         u            1"),
            "{lines:#?}"
        );
        press(&mut app, "m");
        assert_eq!(app.options().mode, Mode::Server);
        press(&mut app, "m");
        assert_eq!(app.options().mode, Mode::Region);
    }

    #[test]
    fn enter_on_a_table_drills_into_its_regions_and_esc_goes_back() {
        let mut app = app();
        press(&mut app, "m");
        app.on_key(key(KeyCode::Down));
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.options().mode, Mode::Region);
        assert_eq!(app.options().drill, Some(Drill::Table("ns:u".into())));
        assert_eq!(regions_in_order(&app), ["u0"]);
        let lines = screen(&mut app, 160, 12);
        assert!(
            lines[4].contains("regions of table ns:u; Esc: back"),
            "{}",
            lines[4]
        );
        app.on_key(key(KeyCode::Esc));
        assert_eq!(app.options().mode, Mode::Table);
        assert_eq!(app.options().drill, None);
    }

    #[test]
    fn r_reverses_and_the_picker_chooses_the_sort_column() {
        let mut app = app();
        press(&mut app, "R");
        assert_eq!(regions_in_order(&app), ["t1", "u0", "t0", "t2"]);
        press(&mut app, "o");
        assert_eq!(app.input(), &Input::Sort(3));
        let lines = screen(&mut app, 160, 30);
        assert!(lines.iter().any(|l| l.contains("sort by")), "{lines:#?}");
        // One up from #REQ/S is REGION; Enter picks it (names ascend).
        app.on_key(key(KeyCode::Up));
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.options().sort, Field::Region);
        assert_eq!(regions_in_order(&app), ["t0", "t1", "t2", "u0"]);
        press(&mut app, ">");
        assert_eq!(app.options().sort, Field::Requests);
        assert!(app.options().descending);
    }

    #[test]
    fn slash_filters_and_a_bad_filter_is_reported_not_applied() {
        let mut app = app();
        press(&mut app, "/TABLE==t");
        let lines = screen(&mut app, 160, 12);
        assert_eq!(lines[11], "Filter: TABLE==t_");
        app.on_key(key(KeyCode::Enter));
        assert_eq!(regions_in_order(&app), ["t2", "t0", "t1"]);
        press(&mut app, "/");
        for _ in 0.."TABLE==t".len() {
            app.on_key(key(KeyCode::Backspace));
        }
        press(&mut app, "NOPE>1");
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.options().filter.text(), "TABLE==t");
        let lines = screen(&mut app, 160, 12);
        assert!(lines[11].contains("unknown column"), "{lines:#?}");
    }

    #[test]
    fn d_sets_the_delay_within_bounds() {
        let mut app = app();
        press(&mut app, "d");
        for _ in 0..3 {
            app.on_key(key(KeyCode::Backspace));
        }
        press(&mut app, "1.5");
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.delay(), Duration::from_millis(1500));
        press(&mut app, "d");
        for _ in 0..3 {
            app.on_key(key(KeyCode::Backspace));
        }
        press(&mut app, "0");
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.delay(), Duration::from_millis(1500));
    }

    #[test]
    fn the_selection_moves_by_rows_and_pages_and_stays_in_bounds() {
        let mut app = app();
        assert_eq!(app.selected(), Some(0));
        app.on_key(key(KeyCode::Up));
        assert_eq!(app.selected(), Some(0));
        app.on_key(key(KeyCode::PageDown));
        assert_eq!(app.selected(), Some(3));
        app.on_key(key(KeyCode::Home));
        assert_eq!(app.selected(), Some(0));
        app.on_key(key(KeyCode::End));
        assert_eq!(app.selected(), Some(3));
        // A filter that leaves one row pulls the selection in.
        press(&mut app, "/SKEY==g");
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.selected(), Some(0));
    }

    #[test]
    fn help_lists_the_keys_and_the_columns_and_any_key_closes_it() {
        let mut app = app();
        press(&mut app, "h");
        let lines = screen(&mut app, 160, 40);
        let text = lines.join("\n");
        assert!(text.contains("reverse the sort order"), "{text}");
        assert!(text.contains("LASTMCOMP"), "{text}");
        press(&mut app, "x");
        assert_eq!(app.input(), &Input::Normal);
        assert_eq!(app.on_key(key(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(
            app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Action::Quit
        );
    }

    #[test]
    fn a_tiny_terminal_draws_without_panicking_help_and_picker_included() {
        let mut app = app();
        for (w, h) in [(1, 1), (10, 3), (40, 8)] {
            screen(&mut app, w, h);
            press(&mut app, "h");
            screen(&mut app, w, h);
            press(&mut app, "x");
            press(&mut app, "o");
            screen(&mut app, w, h);
            app.on_key(key(KeyCode::Esc));
        }
        assert_eq!(app.input(), &Input::Normal);
    }

    #[test]
    fn a_failed_refresh_keeps_the_numbers_and_shows_the_error_until_the_next() {
        let mut app = app();
        app.refresh_failed(&TopError::Connect {
            address: "h:1".into(),
            reason: "refused".into(),
        });
        let lines = screen(&mut app, 160, 12);
        assert!(lines[11].contains("refresh failed"), "{lines:#?}");
        assert_eq!(app.view().records.len(), 4);
        app.refresh(sample(2_000, [10, 40, 1, 90]));
        let lines = screen(&mut app, 160, 12);
        assert_eq!(lines[11], "");
    }
}
