use super::fields::*;
use super::*;
use crate::{Options, Source, lint};
use probity_contract::kube::probe::{
    ExecAction, GrpcAction, HttpGetAction, HttpHeader, ProbeSpec, TcpSocketAction,
};
use probity_contract::kube::termination::{Lifecycle, LifecycleHandler, SleepAction};
use serde::Deserialize;
use serde::de::{self, Visitor};

/// The `rejected-by-api-server` findings for one container's YAML (indented as a list
/// item of `containers`): (line, message), in order.
fn rejected(container: &str) -> Vec<(usize, String)> {
    let text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n{container}"
    );
    let report = lint(&[Source::new("pod.yaml", text)], &Options::default());
    report
        .findings
        .iter()
        .filter(|finding| finding.rule == rule::REJECTED_BY_API_SERVER.id)
        .map(|finding| (finding.line, finding.message.clone()))
        .collect()
}

#[test]
fn reports_the_api_servers_words_where_the_field_is_written() {
    let found = rejected(
        "  - name: app\n    livenessProbe:\n      httpGet: {path: /livez, port: 70000}\n      \
         successThreshold: 3\n    readinessProbe:\n      tcpSocket: {port: \"8080\"}\n      \
         terminationGracePeriodSeconds: 5\n",
    );
    assert_eq!(
        found,
        [
            (
                8,
                "`livenessProbe.httpGet.port` is 70000; it \"must be between 1 and 65535, \
                 inclusive\""
                    .to_owned()
            ),
            (
                9,
                "`livenessProbe.successThreshold` is 3; it \"must be 1\"".to_owned()
            ),
            (
                11,
                "`readinessProbe.tcpSocket.port` is \"8080\"; it \"must contain at least one \
                 letter (a-z)\" (an unquoted number is a port number)"
                    .to_owned()
            ),
            (
                12,
                "`readinessProbe.terminationGracePeriodSeconds` is 5; it \"must not be set for \
                 readinessProbes\" (readiness never kills)"
                    .to_owned()
            ),
        ]
    );
}

#[test]
fn applies_every_rule_of_the_api_servers_probe_validation() {
    let found = rejected(
        "  - name: app\n    livenessProbe:\n      httpGet: {path: /livez}\n      \
         successThreshold: -1\n    readinessProbe:\n      exec: {command: []}\n      \
         httpGet: {port: 8080, scheme: FTP, httpHeaders: [{name: 'X Bad', value: v}]}\n    \
         startupProbe:\n      grpc: {port: 9090}\n      periodSeconds: 3000000000\n",
    );
    let messages: Vec<&str> = found.iter().map(|(_, message)| message.as_str()).collect();
    for expected in [
        "`livenessProbe.httpGet.port`: \"Required value",
        "`livenessProbe.successThreshold` is -1; it \"must be greater than or equal to 0\"",
        "`livenessProbe.successThreshold` is -1; it \"must be 1\"",
        "`readinessProbe.exec.command`: \"Required value",
        "`readinessProbe` has both `exec` and `httpGet`: a probe \"may not specify more than 1 \
         handler type\"",
        "`startupProbe.periodSeconds` is 3000000000; it \"does not fit the API's 32-bit field",
    ] {
        assert!(
            messages.iter().any(|message| message.starts_with(expected)),
            "{expected:?} not in {messages:#?}"
        );
    }
    // The second handler is not validated: the API server stops at the first.
    assert!(!messages.iter().any(|message| message.contains("FTP")));
}

#[test]
fn an_undecodable_value_is_reported_once() {
    // A port of the wrong type cannot be decoded; validation's "Required value" is moot.
    let found = rejected(
        "  - name: app\n    livenessProbe:\n      tcpSocket: {port: [8080]}\n    \
         readinessProbe:\n      httpGet: 8080\n",
    );
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0]
            .1
            .contains("`port` is a list, not a number or a name")
    );
    assert!(
        found[1]
            .1
            .contains("`httpGet` is an integer, not a mapping")
    );
    // A named gRPC port is the `grpc-named-port` rule's finding, not this one's.
    let found = rejected("  - name: app\n    livenessProbe:\n      grpc: {port: grpc}\n");
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn a_negative_pod_grace_period_is_rejected() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  \
                terminationGracePeriodSeconds: -5\n  containers: [{name: app}]\n";
    let report = lint(&[Source::new("pod.yaml", text)], &Options::default());
    let finding = report
        .findings
        .iter()
        .find(|finding| finding.rule == rule::REJECTED_BY_API_SERVER.id)
        .expect("a finding");
    assert_eq!(finding.line, 5);
    assert_eq!(
        finding.message,
        "`terminationGracePeriodSeconds` is -5; it \"must be greater than or equal to 0\""
    );
}

/// The field names serde decodes for `T`: those of the Kubernetes API types in
/// probity-contract.
fn decoded_fields<T: for<'de> Deserialize<'de>>() -> Vec<&'static str> {
    struct Catch(Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &mut Catch {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("fields caught"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut catch = Catch(None);
    let _ = T::deserialize(&mut catch);
    let mut fields = catch.0.expect("a struct").to_vec();
    fields.sort_unstable();
    fields
}

#[test]
fn the_probe_and_lifecycle_schemas_are_the_apis_types() {
    let names = |schema: &Schema| {
        let mut names: Vec<&str> = schema.fields.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names
    };
    assert_eq!(names(&PROBE), decoded_fields::<ProbeSpec>());
    assert_eq!(names(&EXEC), decoded_fields::<ExecAction>());
    assert_eq!(names(&HTTP_GET), decoded_fields::<HttpGetAction>());
    assert_eq!(names(&HTTP_HEADER), decoded_fields::<HttpHeader>());
    assert_eq!(names(&TCP_SOCKET), decoded_fields::<TcpSocketAction>());
    assert_eq!(names(&GRPC), decoded_fields::<GrpcAction>());
    assert_eq!(names(&SLEEP), decoded_fields::<SleepAction>());
    assert_eq!(
        names(&LIFECYCLE_HANDLER),
        decoded_fields::<LifecycleHandler>()
    );
    assert_eq!(names(&LIFECYCLE), decoded_fields::<Lifecycle>());
}

#[test]
fn suggests_the_intended_field() {
    assert_eq!(
        nearest("initialDelaySecond", &PROBE),
        Some("initialDelaySeconds")
    );
    assert_eq!(nearest("failureTreshold", &PROBE), Some("failureThreshold"));
    assert_eq!(nearest("periodseconds", &PROBE), Some("periodSeconds"));
    assert_eq!(nearest("banana", &PROBE), None);
}

#[test]
fn counts_transpositions_as_one_edit() {
    assert_eq!(edit_distance("ab", "ba"), 1);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}
