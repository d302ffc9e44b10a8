//! The MCP protocol revisions the gateway knows, in one table: what each is called on the
//! wire (`protocolVersion`, `MCP-Protocol-Version`), whether it defines elicitation, and the
//! era its messages are judged in ([`Era`]).

/// Protocol era of an exchange: which elicitation shapes and rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2025-06-18 (and the revisions before it, which have no elicitation): form mode only,
    /// `elicitation/create` requests.
    Legacy2025_06,
    /// 2025-11-25: form and URL mode (with `elicitationId`), `-32042` errors.
    Legacy2025_11,
    /// 2026-07-28: `input_required` results; URL mode has no `elicitationId`.
    Stateless2026,
}

/// Every revision, oldest first: its name, the era its messages are judged in, and whether it
/// defines elicitation (a server speaking an older one may still send it: judged as 2025-06-18).
pub const REVISIONS: [(&str, Era, bool); 5] = [
    ("2024-11-05", Era::Legacy2025_06, false),
    ("2025-03-26", Era::Legacy2025_06, false),
    ("2025-06-18", Era::Legacy2025_06, true),
    ("2025-11-25", Era::Legacy2025_11, true),
    ("2026-07-28", Era::Stateless2026, true),
];

impl Era {
    /// The era of a negotiated `protocolVersion`, for revisions that define elicitation.
    pub fn from_protocol_version(version: &str) -> Option<Era> {
        REVISIONS
            .iter()
            .find(|(name, _, elicitation)| *elicitation && *name == version)
            .map(|(_, era, _)| *era)
    }

    /// The era of a request's `MCP-Protocol-Version` header. Absent or unknown: the latest
    /// session-based revision (2025-11-25), whose rules are the strictest of the legacy ones.
    pub fn of_header(version: Option<&str>) -> Era {
        version
            .and_then(|v| REVISIONS.iter().find(|(name, _, _)| *name == v))
            .map_or(Era::Legacy2025_11, |(_, era, _)| *era)
    }

    /// The revision name the era is reported as (audit `revision`).
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy2025_06 => "2025-06-18",
            Era::Legacy2025_11 => "2025-11-25",
            Era::Stateless2026 => "2026-07-28",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_answers_every_question() {
        assert_eq!(
            Era::from_protocol_version("2025-06-18"),
            Some(Era::Legacy2025_06)
        );
        assert_eq!(
            Era::from_protocol_version("2025-11-25"),
            Some(Era::Legacy2025_11)
        );
        assert_eq!(
            Era::from_protocol_version("2026-07-28"),
            Some(Era::Stateless2026)
        );
        // No elicitation in 2024-11-05 or 2025-03-26 ...
        assert_eq!(Era::from_protocol_version("2024-11-05"), None);
        assert_eq!(Era::from_protocol_version("2025-03-26"), None);
        // ... but a request of theirs is judged by the oldest elicitation rules.
        assert_eq!(Era::of_header(Some("2024-11-05")), Era::Legacy2025_06);
        assert_eq!(Era::of_header(Some("2025-03-26")), Era::Legacy2025_06);
        assert_eq!(Era::of_header(Some("2026-07-28")), Era::Stateless2026);
        assert_eq!(Era::of_header(None), Era::Legacy2025_11);
        assert_eq!(Era::of_header(Some("1999-01-01")), Era::Legacy2025_11);
        for (name, era, elicitation) in REVISIONS {
            if elicitation {
                assert_eq!(
                    era.name(),
                    name,
                    "an elicitation revision names its own era"
                );
            }
        }
    }
}
