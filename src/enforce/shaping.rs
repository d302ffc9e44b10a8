//! Capability shaping: the client's declared elicitation capability is narrowed to the modes
//! the route's policy allows before the server sees it, so a compliant server never asks for
//! a disallowed mode (the gateway still enforces in case it does).
//!
//! Legacy: `initialize.params.capabilities.elicitation`, and the 2025-11-25 task-augmented
//! elicitation capability (`capabilities.tasks.requests.elicitation`) is removed, because the
//! answers of task-augmented elicitations travel in `tasks/result` payloads this gateway does
//! not judge. 2026-07-28: `params._meta["io.modelcontextprotocol/clientCapabilities"]` on every
//! request. Nothing else in the message changes.

use elicitgate_core::elicitation::{Mode, META_CLIENT_CAPABILITIES};
use elicitgate_core::policy::Policy;
use serde_json::{Map, Value};

/// Shapes an `initialize` request in place; true when it changed.
pub fn shape_initialize(message: &mut Value, policy: &Policy) -> bool {
    let Some(caps) = message
        .get_mut("params")
        .and_then(|p| p.get_mut("capabilities"))
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    let mut changed = narrow(caps, policy);
    if let Some(requests) = caps
        .get_mut("tasks")
        .and_then(|t| t.get_mut("requests"))
        .and_then(Value::as_object_mut)
    {
        changed |= requests.remove("elicitation").is_some();
    }
    changed
}

/// Shapes a 2026-07-28 request's `_meta` capabilities in place; true when it changed.
pub fn shape_meta(message: &mut Value, policy: &Policy) -> bool {
    message
        .get_mut("params")
        .and_then(|p| p.get_mut("_meta"))
        .and_then(|m| m.get_mut(META_CLIENT_CAPABILITIES))
        .and_then(Value::as_object_mut)
        .is_some_and(|caps| narrow(caps, policy))
}

/// Removes the modes the policy does not allow from `caps.elicitation`.
fn narrow(caps: &mut Map<String, Value>, policy: &Policy) -> bool {
    let allow_form = policy.allows_mode(Mode::Form);
    let allow_url = policy.allows_mode(Mode::Url);
    let Some(elicitation) = caps.get_mut("elicitation") else {
        return false;
    };
    if !allow_form && !allow_url {
        caps.remove("elicitation");
        return true;
    }
    let Some(e) = elicitation.as_object_mut() else {
        // Not an object: not a declaration we understand; inspection treats it as none.
        return false;
    };
    // `{}` means form only.
    let declares_form =
        e.get("form").is_some() || (e.get("form").is_none() && e.get("url").is_none());
    let declares_url = e.get("url").is_some();
    let keep_form = declares_form && allow_form;
    let keep_url = declares_url && allow_url;
    if keep_form == declares_form && keep_url == declares_url {
        return false;
    }
    if !keep_form && !keep_url {
        caps.remove("elicitation");
        return true;
    }
    let mut shaped = Map::new();
    if keep_form {
        shaped.insert(
            "form".into(),
            e.get("form")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        );
    }
    if keep_url {
        shaped.insert(
            "url".into(),
            e.get("url")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        );
    }
    *e = shaped;
    true
}
