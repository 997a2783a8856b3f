//! A run put together from settings, the same way for every front end: provider, tools,
//! plugins, budget, context policy, monitor and bash timeout, and the session's rules (its
//! saved check and desktop). What used to drift between the CLI and the window (plugins, the
//! summary threshold, `DESKHAND_BASH_TIMEOUT`, the screenshot default, the session's check) is
//! decided here once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::approvals::{PendingApprovals, TaskApprover};
use super::lineage::Lineage;
use crate::agent::context::ContextPolicy;
use crate::agent::stall::StallPolicy;
use crate::agent::verify::{Check, SavedCheck};
use crate::agent::{
    Agent, AgentConfig, ApprovalGate, ApprovalPolicy, Budget, DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS, DEFAULT_SYSTEM, RunWindow, SecretPlaces, SessionRules,
};
use crate::delegate::{self, DelegateTool, Delegation, RemoteTarget};
use crate::desktop::{AgentDesktop, DesktopChoice, DesktopError};
use crate::elements::marks;
use crate::llm::config::{self, ConfigError, ProviderSettings};
use crate::llm::pricing::{Price, PriceTable, PriceTableError};
use crate::llm::{Provider, RetryPolicy};
use crate::memory;
use crate::paths;
use crate::sandbox::{Sandbox, SandboxChoice, SandboxError};
use crate::secrets::{self, ApiKey, OsKeyring};
use crate::store::{Store, StoreError};
use crate::tools::ToolRegistry;
use crate::tools::catalog::{self, CatalogError, MadeTool, MemoryAccess, ToolSettings};
use crate::tools::computer::scaling::Size;
use crate::tools::launch::Launch;
use crate::tools::plugins::{PluginConfig, PluginError, PluginTimeouts, Plugins, Selection};
use deskhand_protocol::ids::{SessionId, TaskId};

/// Screenshots sent to the model at most, unless a run asks for another number.
pub const DEFAULT_KEEP_SCREENSHOTS: usize = 3;
/// The share of the context window (percent) at which older turns are summarized.
pub const DEFAULT_SUMMARIZE_AT: u8 = 80;
/// Where the default bash timeout can be changed for every front end.
pub const BASH_TIMEOUT_VARIABLE: &str = "DESKHAND_BASH_TIMEOUT";

/// Everything a front end can choose about a run. `Default` is what a run gets when nobody
/// chose: the same for the CLI, the window and the API.
#[derive(Clone)]
pub struct RunSettings {
    pub provider: ProviderSettings,
    /// A provider the embedder made itself (a benchmark's, another program's); `None`: the
    /// one `provider` chooses. Its model is `provider.model`.
    pub made_provider: Option<Arc<dyn Provider>>,
    /// The provider's key when the front end has looked it up already; else the provider's
    /// variable, then the OS keyring.
    pub api_key: Option<ApiKey>,
    /// Whether `provider.base_url` was chosen by a request (the local API), not by the
    /// person's own configuration: then only `api_key` goes there, never a key of this
    /// machine's environment or keyring.
    pub base_url_from_request: bool,
    /// Tools and plugin servers by name; `None`: every tool that works here and every
    /// enabled plugin server.
    pub tools: Option<Vec<String>>,
    pub approval: ApprovalPolicy,
    pub max_turns: u32,
    /// This run's limits; each `None` falls back to the stored setting.
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    /// `None`: `$DESKHAND_BASH_TIMEOUT`, else 120 s.
    pub bash_timeout: Option<Duration>,
    pub keep_screenshots: usize,
    pub summarize_at: u8,
    pub monitor: Option<usize>,
    pub screenshot_size: Option<Size>,
    /// `None`: the default system prompt.
    pub system: Option<String>,
    /// Whether the notes chosen for the prompt go into the system prompt (the stored
    /// memory-in-prompt setting can still turn them off); the `memory` tool stays either way.
    pub memory: bool,
    /// Proof of done: run after the model stops (`agent::verify`). `None`: the check its
    /// stored session saved, if any; one given is saved with the session ([`session_rules`]).
    pub check: Option<Check>,
    pub stall: StallChoice,
    /// Where the run works, and its sandbox.
    pub desktop: DesktopSettings,
    /// Remote Deskhand services the `delegate` tool may hand tasks to, besides the stored
    /// `delegate.targets` setting.
    pub delegate_to: Vec<RemoteTarget>,
    /// Whether this run may delegate at all; a delegated task may not delegate again.
    pub may_delegate: bool,
    /// The tasks that delegated this one, across services (`super::lineage`).
    pub lineage: Lineage,
    /// Numbered marks on the computer tool's screenshots; `None`: `$DESKHAND_SET_OF_MARKS`,
    /// else the stored setting (the window's toggle, `deskhand settings`), else off.
    pub set_of_marks: Option<bool>,
}

/// The stall breaker as a front end chose it; each `None` falls back to the stored setting,
/// then to the default.
#[derive(Clone, Debug, PartialEq)]
pub struct StallChoice {
    pub enabled: bool,
    pub repeats: Option<u32>,
    pub no_ops: Option<u32>,
    pub cycles: Option<u32>,
    pub ask_timeout: Option<Duration>,
}

impl Default for StallChoice {
    fn default() -> Self {
        Self {
            enabled: true,
            repeats: None,
            no_ops: None,
            cycles: None,
            ask_timeout: None,
        }
    }
}

impl StallChoice {
    /// The thresholds for a run: this choice, else the stored settings, else the defaults.
    fn policy(&self, store: &Store) -> Result<StallPolicy, StoreError> {
        let defaults = StallPolicy::default();
        let stored = |key: &str, default: u32| -> Result<u32, StoreError> {
            Ok(store
                .setting(key)?
                .and_then(|v| v.as_u64())
                .map_or(default, |n| n.clamp(2, u64::from(u32::MAX)) as u32))
        };
        Ok(StallPolicy {
            enabled: self.enabled,
            repeats: match self.repeats {
                Some(n) => n,
                None => stored(StallPolicy::REPEATS_SETTING, defaults.repeats)?,
            },
            no_ops: match self.no_ops {
                Some(n) => n,
                None => stored(StallPolicy::NO_OPS_SETTING, defaults.no_ops)?,
            },
            cycles: match self.cycles {
                Some(n) => n,
                None => stored(StallPolicy::CYCLES_SETTING, defaults.cycles)?,
            },
            ask_timeout: self.ask_timeout.unwrap_or(defaults.ask_timeout),
        })
    }
}

/// Where a run works, as its front end chose it. What it leaves `None` is its session's saved
/// choice ([`session_rules`] fills it in); a new session's is the person's screen, with the
/// sandbox on an agent desktop, not kept.
#[derive(Clone, Debug, PartialEq)]
pub struct DesktopSettings {
    /// An agent desktop of its own (`crate::desktop`) instead of the person's screen.
    pub agent: Option<bool>,
    /// The sandbox for the agent's programs (`crate::sandbox`), on either desktop.
    pub sandbox: Option<bool>,
    /// Keep the agent desktop after the run, for the session's next run (which then works on
    /// the same screen); else it ends with the run. It never outlives the process either way.
    pub keep: Option<bool>,
    /// The folders the sandbox shares and whether it has the network: this run's own, never
    /// saved with the session.
    pub shares: Vec<PathBuf>,
    pub network: bool,
}

impl Default for DesktopSettings {
    fn default() -> Self {
        Self {
            agent: None,
            sandbox: None,
            keep: None,
            shares: Vec::new(),
            network: true,
        }
    }
}

/// The window's choice: its `sandbox` and `keep` are an agent desktop's (the side panel
/// offers them there only), so a choice of the person's screen leaves the session's as
/// they were.
impl From<DesktopChoice> for DesktopSettings {
    fn from(choice: DesktopChoice) -> Self {
        Self {
            agent: Some(choice.agent),
            sandbox: choice.agent.then_some(choice.sandbox),
            keep: choice.agent.then_some(choice.keep),
            ..Self::default()
        }
    }
}

impl DesktopSettings {
    pub fn agent(&self) -> bool {
        self.agent == Some(true)
    }

    /// Whether the run's agent desktop stays for the session's next run.
    pub fn keeps(&self) -> bool {
        self.agent() && self.keep == Some(true)
    }

    /// The run's sandbox, if it has one (by default on an agent desktop).
    pub fn sandbox(&self) -> Option<SandboxChoice> {
        self.sandbox.unwrap_or(self.agent()).then(|| SandboxChoice {
            shares: self.shares.clone(),
            network: self.network,
        })
    }

    /// Fills in what the run left to its session from `saved` (the session's saved choice,
    /// or the default for a new one), refusing parts that do not go together. Returns the
    /// session's choice to save when the run chose any part of it.
    fn settle(&mut self, saved: DesktopChoice) -> Result<Option<DesktopChoice>, PrepareError> {
        let chose = self.agent.is_some() || self.sandbox.is_some() || self.keep.is_some();
        let agent = self.agent.unwrap_or(saved.agent);
        // The saved sandbox is an agent desktop's: none on the person's screen unless asked.
        let sandbox = self.sandbox.unwrap_or(agent && saved.sandbox);
        let keep = self.keep.unwrap_or(saved.keep);
        if self.keep == Some(true) && !agent {
            return Err(PrepareError::Choice(
                "keeping the desktop needs an agent desktop".into(),
            ));
        }
        if !sandbox && (!self.shares.is_empty() || !self.network) {
            return Err(PrepareError::Choice(
                "sharing a folder and cutting the network need the sandbox".into(),
            ));
        }
        self.agent = Some(agent);
        self.sandbox = Some(sandbox);
        self.keep = Some(keep);
        Ok(chose.then_some(DesktopChoice {
            agent,
            sandbox: if agent { sandbox } else { saved.sandbox },
            keep,
        }))
    }
}

/// What a run chose of its session's rules (its check, its desktop): saved with the session
/// once the task is accepted, so that the session's next task gets them whoever runs it.
#[derive(Debug, Default, PartialEq)]
pub(super) struct SessionChoice {
    check: Option<SavedCheck>,
    desktop: Option<DesktopChoice>,
}

impl SessionChoice {
    pub(super) fn save(&self, store: &Store, session_id: &SessionId) -> Result<(), StoreError> {
        if let Some(check) = &self.check {
            store.set_session_check(session_id, Some(check))?;
        }
        if let Some(desktop) = &self.desktop {
            store.set_session_desktop(session_id, desktop)?;
        }
        Ok(())
    }
}

/// A session's rules, the same whichever front end runs its task: the check and the desktop
/// the run chose, else those its stored session (`session`; `None` for a new one) saved, the
/// window's per-session settings or an earlier task's choice. A choice made for a stored
/// session replaces its saved one, as `SessionChoice::save` does for every task.
pub(super) fn session_rules(
    settings: &mut RunSettings,
    store: &Store,
    session: Option<&SessionId>,
) -> Result<SessionChoice, PrepareError> {
    let saved = match session {
        Some(id) => store.session_desktop(id)?,
        None => DesktopChoice::default(),
    };
    let desktop = settings.desktop.settle(saved)?;
    let check = match (&settings.check, session) {
        (Some(check), _) => Some(SavedCheck::from(check)),
        (None, Some(id)) => {
            settings.check = store
                .session_check(id)?
                .as_ref()
                .map(Check::saved)
                .transpose()
                .map_err(|e| {
                    PrepareError::Invalid(format!(
                        "the session's check: {e}; change it in the session's settings"
                    ))
                })?;
            None
        }
        (None, None) => None,
    };
    Ok(SessionChoice { check, desktop })
}

impl Default for RunSettings {
    fn default() -> Self {
        Self {
            provider: ProviderSettings::default(),
            made_provider: None,
            api_key: None,
            base_url_from_request: false,
            tools: None,
            approval: ApprovalPolicy::Ask,
            max_turns: DEFAULT_MAX_TURNS,
            max_cost_usd: None,
            max_tokens: None,
            bash_timeout: None,
            keep_screenshots: DEFAULT_KEEP_SCREENSHOTS,
            summarize_at: DEFAULT_SUMMARIZE_AT,
            monitor: None,
            screenshot_size: None,
            system: None,
            memory: true,
            check: None,
            stall: StallChoice::default(),
            desktop: DesktopSettings::default(),
            delegate_to: Vec::new(),
            may_delegate: true,
            lineage: Lineage::default(),
            set_of_marks: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Provider(#[from] ConfigError),
    #[error(transparent)]
    Prices(#[from] PriceTableError),
    #[error(transparent)]
    Plugins(#[from] PluginError),
    #[error(transparent)]
    Tools(#[from] CatalogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Desktop(#[from] DesktopError),
    /// A cost limit for a model without a known price.
    #[error("{limit} needs the price of `{model}`: add it to {prices}")]
    NoPrice {
        limit: &'static str,
        model: String,
        prices: String,
    },
    #[error("{0}")]
    Invalid(String),
    /// Plugin servers named in `tools` that could not start.
    #[error("{}", .0.join("; "))]
    PluginsFailed(Vec<String>),
    /// Parts of a run's desktop that do not go together (a shared folder and no sandbox):
    /// the caller's mistake in how it asked, refused before anything starts.
    #[error("{0}")]
    Choice(String),
}

/// Seconds as a duration: a positive, finite number.
pub fn parse_seconds(text: &str) -> Result<Duration, SecondsError> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds > 0.0 && seconds.is_finite() => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(SecondsError(text.to_string())),
    }
}

/// A text that is not a positive number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a positive number of seconds")]
pub struct SecondsError(String);

/// The checks that can refuse a run before anything starts, done when the task is
/// submitted so the front end can say what is wrong at once.
pub struct Resolved {
    settings: RunSettings,
    provider: Arc<dyn Provider>,
    model: String,
    price: Option<Price>,
    budget: Budget,
    plugin_config: PluginConfig,
    selection: Selection,
    bash_timeout: Duration,
    stall: StallPolicy,
    sandbox: Option<Sandbox>,
    set_of_marks: bool,
}

impl Resolved {
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Whether the run's agent desktop stays for the session's next run.
    pub fn keeps_desktop(&self) -> bool {
        self.settings.desktop.keeps()
    }
}

/// Why a run whose base URL a request chose has no key when the request brought none.
const KEY_STAYS_HOME: &str = "a base URL chosen by the request gets only a key the request \
     brings (`api_key`): the keys of this machine go only to the base URLs its own settings \
     name";

/// Picks the provider and checks the budget, the plugin selection and the bash timeout.
pub fn resolve(settings: RunSettings, store: &Store) -> Result<Resolved, PrepareError> {
    let bash_timeout = match settings.bash_timeout {
        Some(timeout) => timeout,
        None => match std::env::var(BASH_TIMEOUT_VARIABLE) {
            Ok(text) => parse_seconds(&text)
                .map_err(|e| PrepareError::Invalid(format!("{BASH_TIMEOUT_VARIABLE}: {e}")))?,
            Err(_) => crate::tools::bash::DEFAULT_TIMEOUT,
        },
    };
    if !(10..=95).contains(&settings.summarize_at) {
        return Err(PrepareError::Invalid(format!(
            "the summary threshold must be between 10 and 95 percent, not {}",
            settings.summarize_at
        )));
    }
    if settings.max_turns == 0 {
        return Err(PrepareError::Invalid(
            "the turn limit must be at least 1".into(),
        ));
    }
    let (provider, model) = match &settings.made_provider {
        Some(provider) => (
            provider.clone(),
            settings.provider.model.clone().unwrap_or_default(),
        ),
        None => {
            let given = settings.api_key.clone();
            let only_given = settings.base_url_from_request && settings.provider.base_url.is_some();
            // A base URL a request chose never gets a secret of this machine's environment.
            let env = |name: &str| {
                let secret = crate::program_env::is_secret_name(std::ffi::OsStr::new(name));
                if only_given && secret {
                    None
                } else {
                    config::process_env(name)
                }
            };
            let chosen = config::choose(
                &settings.provider,
                &env,
                &|id| match &given {
                    Some(key) => Ok(Some(key.expose().to_string())),
                    None if only_given => Err(KEY_STAYS_HOME.into()),
                    None => secrets::stored_key(&OsKeyring::default(), id),
                },
                RetryPolicy::default(),
            )?;
            (chosen.provider, chosen.model)
        }
    };
    crate::program_env::pass_on(passed_setting(store)?);
    let stored = store.budget()?;
    let budget = Budget {
        max_cost_usd: settings.max_cost_usd.or(stored.max_cost_usd),
        max_tokens: settings.max_tokens.or(stored.max_tokens),
    };
    let prices_file = paths::config_dir().join("prices.json");
    let price = PriceTable::with_overrides(&prices_file)?.price(&model);
    if budget.max_cost_usd.is_some() && price.is_none() {
        return Err(PrepareError::NoPrice {
            limit: match settings.max_cost_usd {
                Some(_) => "--max-cost",
                None => "the max-cost setting",
            },
            model: model.clone(),
            prices: prices_file.display().to_string(),
        });
    }
    let plugin_config = PluginConfig::load(&PluginConfig::default_path())?;
    let selection = plugin_config.select(settings.tools.as_deref())?;
    let stall = settings.stall.policy(store)?;
    let set_of_marks = marks::chosen(
        settings.set_of_marks,
        std::env::var(marks::OVERRIDE_VARIABLE).ok().as_deref(),
        store.setting(marks::SETTING)?.as_ref(),
    )
    .map_err(|e| PrepareError::Invalid(e.to_string()))?;
    let sandbox = settings
        .desktop
        .sandbox()
        .map(|choice| Sandbox::new(&choice, store.dir()))
        .transpose()?;
    Ok(Resolved {
        settings,
        provider,
        model,
        price,
        budget,
        plugin_config,
        selection,
        bash_timeout,
        stall,
        sandbox,
        set_of_marks,
    })
}

/// What the `delegate` tool works with, when the run offers it: asked for by name, or by
/// default when remotes are configured (the flag's and the stored setting's). A delegated
/// run never offers it.
fn delegation(
    settings: &RunSettings,
    requested: Option<&[String]>,
    store: &Store,
    engine: &super::Engine,
    session_id: &SessionId,
    task_id: &TaskId,
    approvals: &Arc<PendingApprovals>,
) -> Result<Option<Delegation>, PrepareError> {
    if !settings.may_delegate {
        return Ok(None);
    }
    let mut remotes = settings.delegate_to.clone();
    if let Some(stored) = store
        .setting(delegate::TARGETS_SETTING)?
        .filter(|v| !v.is_null())
    {
        let Some(targets) = stored.as_object() else {
            return Err(PrepareError::Invalid(format!(
                "the `{}` setting must map names to URLs",
                delegate::TARGETS_SETTING
            )));
        };
        for (name, url) in targets {
            let url = url.as_str().unwrap_or_default();
            let target = RemoteTarget::parse(&format!("{name}={url}")).map_err(|e| {
                PrepareError::Invalid(format!("the `{}` setting: {e}", delegate::TARGETS_SETTING))
            })?;
            if !remotes.iter().any(|r| r.name == target.name) {
                remotes.push(target);
            }
        }
    }
    let wanted = match requested {
        Some(names) => names.iter().any(|n| n == delegate::NAME),
        None => !remotes.is_empty(),
    };
    Ok(wanted.then(|| Delegation {
        engine: engine.clone(),
        session_id: session_id.clone(),
        lineage: settings.lineage.child_of(task_id),
        settings: settings.clone(),
        remotes,
        approvals: approvals.clone(),
    }))
}

/// A run ready to go: its agent, the plugin servers it started (shut them down after it),
/// and the servers that did not start (reported, and the run goes on without them).
pub struct Prepared {
    pub agent: Agent,
    pub plugins: Plugins,
    pub problems: Vec<String>,
    /// The run's own desktop; dropping the last handle (after the run, unless it is kept)
    /// ends it.
    pub desktop: Option<Arc<AgentDesktop>>,
}

/// Makes the tools (starting plugin servers) and the agent for task `task_id`, a run of
/// `session_id` on `prompt` (which chooses the notes for the system prompt), with the approval gate asking
/// through `approvals` and remembering "always allow" in the session's `rules`.
/// The run's store is `engine`'s, the engine a local delegated task runs on. `kept` is
/// the desktop the session's last run kept: used again if this run wants an agent desktop,
/// else ended.
#[allow(clippy::too_many_arguments)]
pub async fn prepare(
    resolved: Resolved,
    engine: &super::Engine,
    session_id: &SessionId,
    task_id: &TaskId,
    prompt: &str,
    approvals: Arc<PendingApprovals>,
    rules: SessionRules,
    window: Option<Arc<dyn RunWindow>>,
    kept: Option<Arc<AgentDesktop>>,
) -> Result<Prepared, PrepareError> {
    let store = engine.store();
    let Resolved {
        settings,
        provider,
        model,
        price,
        budget,
        plugin_config,
        selection,
        bash_timeout,
        stall,
        sandbox,
        set_of_marks,
    } = resolved;
    let mut settings = settings;
    let desktop = match (settings.desktop.agent(), kept) {
        (true, Some(kept)) => Some(kept),
        (true, None) => Some(Arc::new(AgentDesktop::start().await?)),
        (false, _) => None,
    };
    let mut launch = Launch {
        env: desktop
            .as_ref()
            .map(|desktop| desktop.environment())
            .unwrap_or_default(),
        // The person's accessibility bus, if they named one, is not the desktop's.
        remove: desktop
            .iter()
            .map(|_| "AT_SPI_BUS_ADDRESS".into())
            .collect(),
        ..Launch::default()
    };
    if let Some(check) = &mut settings.check {
        check.env = launch.env.clone();
    }
    if let Some(sandbox) = &sandbox {
        launch = sandbox.wrap(&launch);
    }
    let delegation = delegation(
        &settings,
        selection.builtin.as_deref(),
        store,
        engine,
        session_id,
        task_id,
        &approvals,
    )?;
    let tool_settings = ToolSettings {
        model: model.clone(),
        monitor: settings.monitor,
        screenshot_size: settings.screenshot_size,
        bash_timeout,
        memory: Some(MemoryAccess {
            store: store.clone(),
            session_id: session_id.clone(),
            run_keys: provider.api_key().map(str::to_string).into_iter().collect(),
        }),
        display: desktop.as_ref().map(|desktop| desktop.display_name()),
        accessibility_bus: desktop
            .as_ref()
            .and_then(|desktop| desktop.accessibility_bus().map(str::to_string)),
        launch,
        sandboxed: sandbox.is_some(),
        delegate: delegation.map(|d| MadeTool(Arc::new(DelegateTool::new(d)))),
        set_of_marks,
        ..ToolSettings::default()
    };
    let mut tools: ToolRegistry = catalog::registry(selection.builtin.as_deref(), &tool_settings)?;
    let secret_places = SecretPlaces::for_store(store)?;
    let base_system = settings.system.as_deref().unwrap_or(DEFAULT_SYSTEM);
    let (system, notes) = memory::for_run(store, base_system, prompt, settings.memory)?;
    let plugins = Plugins::start(
        &plugin_config,
        &selection.servers,
        PluginTimeouts::default(),
    )
    .await;
    let problems = plugins.add_tools(&mut tools).await;
    if selection.explicit && !problems.is_empty() {
        plugins.shutdown().await;
        return Err(PrepareError::PluginsFailed(problems));
    }
    // A window on the person's screen has nothing to get out of the way of on the run's own.
    let window = window.filter(|_| desktop.is_none());
    if let Some(window) = &window {
        tools = tools.wrap_tools(|tool| window.wrap(tool));
    }
    let gate = ApprovalGate::new(settings.approval, Box::new(TaskApprover { approvals }))
        .with_secret_places(secret_places)
        .with_session_rules(rules);
    let agent = Agent {
        provider,
        tools: Arc::new(tools),
        gate: Arc::new(gate),
        config: AgentConfig {
            model: model.clone(),
            system,
            max_turns: settings.max_turns,
            max_tokens: DEFAULT_MAX_TOKENS,
            context: ContextPolicy {
                keep_screenshots: Some(settings.keep_screenshots),
                context_window: config::context_window(&model),
                summarize_at: f64::from(settings.summarize_at) / 100.0,
                ..ContextPolicy::default()
            },
            price,
            budget,
            notes,
            stall,
            check: settings.check,
            window,
        },
    };
    Ok(Prepared {
        agent,
        plugins,
        problems,
        desktop,
    })
}

/// The names the person passes on to the agent's programs
/// ([`program_env::PASS_SETTING`](crate::program_env::PASS_SETTING)): none unless set.
fn passed_setting(store: &Store) -> Result<Vec<String>, StoreError> {
    Ok(match store.setting(crate::program_env::PASS_SETTING)? {
        Some(value) => serde_json::from_value(value).unwrap_or_default(),
        None => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved_check(command: &str) -> SavedCheck {
        SavedCheck {
            command: command.into(),
            timeout_secs: 5.0,
        }
    }

    #[test]
    fn a_stored_sessions_check_and_desktop_apply_unless_the_task_chose_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let s = SessionId::from("s");
        let kept_agent = DesktopChoice {
            agent: true,
            sandbox: false,
            keep: true,
        };
        store
            .set_session_check(&s, Some(&saved_check("true")))
            .unwrap();
        store.set_session_desktop(&s, &kept_agent).unwrap();

        let mut settings = RunSettings::default();
        let chosen = session_rules(&mut settings, &store, Some(&s)).unwrap();
        assert_eq!(
            chosen,
            SessionChoice::default(),
            "nothing chosen, nothing saved"
        );
        assert_eq!(settings.check.unwrap().command, "true");
        let desktop = &settings.desktop;
        assert!(desktop.agent() && desktop.keeps() && desktop.sandbox().is_none());

        // Chosen parts win and are what is saved; the rest stays the session's.
        let mut settings = RunSettings {
            check: Some(Check::new("false", Duration::from_secs(5)).unwrap()),
            desktop: DesktopSettings {
                sandbox: Some(true),
                ..DesktopSettings::default()
            },
            ..RunSettings::default()
        };
        let chosen = session_rules(&mut settings, &store, Some(&s)).unwrap();
        assert_eq!(settings.check.unwrap().command, "false");
        assert!(settings.desktop.agent() && settings.desktop.sandbox().is_some());
        assert_eq!(
            chosen,
            SessionChoice {
                check: Some(saved_check("false")),
                desktop: Some(DesktopChoice {
                    sandbox: true,
                    ..kept_agent
                }),
            }
        );

        // A new session: no check, the person's screen, nothing saved.
        let mut settings = RunSettings::default();
        let chosen = session_rules(&mut settings, &store, None).unwrap();
        assert_eq!(chosen, SessionChoice::default());
        assert!(settings.check.is_none());
        assert!(!settings.desktop.agent() && settings.desktop.sandbox().is_none());
    }

    #[test]
    fn the_windows_choice_of_the_persons_screen_keeps_the_agent_desktops_settings() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut settings = RunSettings {
            desktop: DesktopChoice {
                agent: false,
                sandbox: false,
                keep: true,
            }
            .into(),
            ..RunSettings::default()
        };
        let chosen = session_rules(&mut settings, &store, None).unwrap();
        assert!(!settings.desktop.keeps() && settings.desktop.sandbox().is_none());
        assert_eq!(chosen.desktop, Some(DesktopChoice::default()));
    }

    #[test]
    fn desktop_parts_that_do_not_go_together_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let s = SessionId::from("s");
        let refused = |desktop: DesktopSettings, session: Option<&SessionId>| {
            let mut settings = RunSettings {
                desktop,
                ..RunSettings::default()
            };
            match session_rules(&mut settings, &store, session) {
                Err(PrepareError::Choice(message)) => Some(message),
                Err(other) => panic!("{other}"),
                Ok(_) => None,
            }
        };
        let cut_off = DesktopSettings {
            network: false,
            ..DesktopSettings::default()
        };
        let kept = DesktopSettings {
            keep: Some(true),
            ..DesktopSettings::default()
        };
        assert!(
            refused(cut_off.clone(), None)
                .unwrap()
                .contains("need the sandbox")
        );
        assert!(
            refused(kept.clone(), None)
                .unwrap()
                .contains("agent desktop")
        );
        // A session saved on a sandboxed agent desktop makes both fine.
        store
            .set_session_desktop(
                &s,
                &DesktopChoice {
                    agent: true,
                    ..DesktopChoice::default()
                },
            )
            .unwrap();
        assert_eq!(refused(cut_off, Some(&s)), None);
        assert_eq!(refused(kept, Some(&s)), None);
    }
}
