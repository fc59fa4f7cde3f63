//! A copy a ClusterMirror or a Mirror wrote, explained from its side:
//! its request's row for it.

use super::*;

/// Explains a copy carrying the marks of the ClusterMirror or Mirror
/// `asker`: its row for the copy, as in `--namespace`.
pub async fn copy_of<K: Explained>(
    client: &Client,
    install: &Rules,
    copy: K,
    asker: &RequestKey,
) -> Report {
    let said = asker.said();
    let meta = copy.meta().clone();
    let namespace = meta.namespace.clone().unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    let mut report = Report::about(subject::<K>(&namespace, &name, Is::Copy));
    let row = |verdict, detail| Row {
        what: What::copy_of_request(asker),
        kind: K::NAME,
        namespace: namespace.clone(),
        name: name.clone(),
        source: mirror_of(&meta).map(|(ns, n)| format!("{ns}/{n}")),
        request: Some(asker.clone()),
        verdict,
        detail,
    };
    let facts = match namespace_facts(client, &namespace).await {
        Ok(Some(facts)) => facts,
        Ok(None) => return report,
        Err(why) => {
            let detail = format!("cannot read its namespace: {why}");
            report.rows.push(row(Verdict::CannotRead, detail));
            return report;
        }
    };
    let object = match read_asker(client, asker, &copy, row).await {
        Ok(object) => object,
        Err(row) => {
            report.rows.push(row);
            return report;
        }
    };
    let class = object.class();
    if class != install.cluster_mirror_class {
        let detail = format!(
            "its {said} is of {}, served by another install: this one \
             leaves it alone (explain it with --cluster-mirror-class={class})",
            class_words(class)
        );
        report.rows.push(row(Verdict::OtherInstall, detail));
        return report;
    }
    let request = Request::of(&object);
    if let Ok(request) = &request
        && request.copy_kind() != K::SOURCE_KIND
    {
        let detail = format!(
            "its {}'s copies are {}s now: the controller removes it",
            asker.kind().name(),
            request.copy_kind()
        );
        report.rows.push(row(Verdict::Unwanted, detail));
        return report;
    }
    let key = comparison_key::<K>(&request);
    let scene = scene::<K>(client, install, &object, request, Some(&facts)).await;
    let rows = in_namespace(&scene, &namespace, install, &key);
    report.rows.extend(
        rows.into_iter()
            .filter(|row| row.name == name || row.verdict == Verdict::CannotRead),
    );
    report
}

/// The ClusterMirror or Mirror `asker` a copy names; else the row that
/// says why it cannot be told: gone (an orphan, or removed once the
/// controller runs), its CRD not installed, or unreadable.
async fn read_asker<K: Explained>(
    client: &Client,
    asker: &RequestKey,
    copy: &K,
    row: impl Fn(Verdict, String) -> Row,
) -> Result<StoredClusterMirror, Row> {
    match get_request(client, asker).await {
        Ok(Some(object)) => Ok(object),
        Ok(None) => {
            let crd = live_crd_uid(client, asker.kind()).await;
            let crd = crd.as_ref().map(Option::as_deref);
            Err(orphan_row(K::NAME, copy.meta(), asker, crd))
        }
        Err(kube::Error::Api(status)) if status.code == 404 => {
            let kind = asker.kind().name();
            let detail = format!(
                "the {kind} CRD is not installed: no {kind} copy is removed while it is missing"
            );
            Err(row(Verdict::NoSource, detail))
        }
        Err(error) => {
            let detail = format!("cannot read {}: {}", asker.said(), why(error));
            Err(row(Verdict::CannotRead, detail))
        }
    }
}
