//! A run put together from settings, the same way for every front end: provider, tools,
//! plugins, budget, context policy, monitor and bash timeout. What used to drift between the
//! CLI and the window (plugins, the summary threshold, `DESKHAND_BASH_TIMEOUT`, the screenshot
//! default) is decided here once.

use std::sync::Arc;
use std::time::Duration;

use super::approvals::{PendingApprovals, TaskApprover};
use super::lineage::Lineage;
use crate::agent::context::ContextPolicy;
use crate::agent::stall::StallPolicy;
use crate::agent::verify::Check;
use crate::agent::{
    Agent, AgentConfig, ApprovalGate, ApprovalPolicy, Budget, DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS, DEFAULT_SYSTEM, SecretPlaces, SessionRules,
};
use crate::delegate::{self, DelegateTool, Delegation, RemoteTarget};
use crate::desktop::{AgentDesktop, DesktopError};
use crate::elements::marks;
use crate::llm::config::{self, ConfigError, ProviderSettings};
use crate::llm::pricing::{Price, PriceTable, PriceTableError};
use crate::llm::{Provider, RetryPolicy};
use crate::memory;
use crate::paths;
use crate::sandbox::{Sandbox, SandboxChoice, SandboxError};
use crate::secrets::{self, ApiKey, OsKeyring};
use crate::store::{Store, StoreError};
use crate::tools::catalog::{self, CatalogError, MadeTool, MemoryAccess, ToolSettings};
use crate::tools::computer::scaling::Size;
use crate::tools::launch::Launch;
use crate::tools::plugins::{PluginConfig, PluginError, PluginTimeouts, Plugins, Selection};
use crate::tools::{Tool, ToolRegistry};

/// Screenshots sent to the model at most, unless a run asks for another number.
pub const DEFAULT_KEEP_SCREENSHOTS: usize = 3;
/// The share of the context window (percent) at which older turns are summarized.
pub const DEFAULT_SUMMARIZE_AT: u8 = 80;
/// Where the default bash timeout can be changed for every front end.
pub const BASH_TIMEOUT_VARIABLE: &str = "DESKHAND_BASH_TIMEOUT";

/// Wraps each tool of a run (the window hides itself while the computer tool acts).
pub type ToolWrapper = Arc<dyn Fn(Arc<dyn Tool>) -> Arc<dyn Tool> + Send + Sync>;

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
    /// Proof of done: run after the model stops (`agent::verify`).
    pub check: Option<Check>,
    pub stall: StallChoice,
    /// Run on an agent desktop of its own (`crate::desktop`) instead of the person's screen.
    pub agent_desktop: bool,
    /// Keep the agent desktop after the run, for the session's next run (which then works on
    /// the same screen); else it ends with the run. It never outlives the process either way.
    pub keep_desktop: bool,
    /// The sandbox the agent's programs run in (`crate::sandbox`); `None`: none.
    pub sandbox: Option<SandboxChoice>,
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
            agent_desktop: false,
            keep_desktop: false,
            sandbox: None,
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
}

/// Seconds as a duration: a positive, finite number.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds > 0.0 && seconds.is_finite() => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

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
        self.settings.agent_desktop && self.settings.keep_desktop
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
    .map_err(PrepareError::Invalid)?;
    let sandbox = settings
        .sandbox
        .as_ref()
        .map(|choice| Sandbox::new(choice, store.dir()))
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
    session_id: &str,
    task_id: &str,
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
        session_id: session_id.to_string(),
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
    session_id: &str,
    task_id: &str,
    prompt: &str,
    approvals: Arc<PendingApprovals>,
    rules: SessionRules,
    wrap: Option<ToolWrapper>,
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
    let desktop = match (settings.agent_desktop, kept) {
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
            session_id: session_id.to_string(),
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
    if let Some(wrap) = wrap {
        tools = tools.wrap_tools(|tool| wrap(tool));
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
