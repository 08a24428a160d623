"""The hand-written team decisions (data only; :mod:`.decisions` builds the dataset from them).

Each thread is one thing a team decides (a schedule, a tool, a version, a buffer, a plan),
its states in time order as the team wrote them, each later one replacing the earlier in
plain words, and members' notes that restate a state (a note dated like a state that
differs from it is a stale note in that very group). Threads with one state are decisions
that are never replaced and share words with a replaced one ("Deploys of the mobile app
..." beside web deploys): they must stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass

State = tuple[str, str, str]  # (date YYYY-MM-DD, value, text)


@dataclass(frozen=True)
class Thread:
    key: str
    question: str
    kind: str  # decision, protocol, plan, instruction
    states: tuple[State, ...]
    notes: tuple[State, ...] = ()


@dataclass(frozen=True)
class TeamSet:
    team: str
    domain: str
    lead: str
    members: tuple[str, ...]
    threads: tuple[Thread, ...]


T = Thread
TEAMS: tuple[TeamSet, ...] = (
    TeamSet("web-platform", "software", "maria", ("dev-ana", "dev-tom", "dev-lee"), (
        T("web-deploy-day", "Which day do web deploys happen?", "decision", (
            ("2024-01-08", "Tuesday", "Deploys happen on Tuesdays."),
            ("2024-02-07", "Thursday", "Deploys now happen on Thursdays instead of Tuesdays."),
            ("2024-03-06", "Friday", "From now on deploys happen on Fridays instead of Thursdays.")),
          notes=(("2024-01-22", "Tuesday", "Queued the billing fix for Tuesday's deploy."),
                 ("2024-02-07", "Tuesday", "I'll hold my PR for the Tuesday deploy window."))),
        T("mobile-deploy-day", "Which day do mobile app deploys happen?", "decision", (
            ("2024-01-08", "Monday", "Deploys of the mobile app happen on Mondays."),)),
        T("ci-system", "Which CI system do our builds run on?", "decision", (
            ("2024-01-15", "Jenkins", "All builds run on Jenkins."),
            ("2024-03-04", "GitHub Actions", "We've moved CI off Jenkins; builds run on GitHub Actions now.")),
          notes=(("2024-03-04", "Jenkins", "Restarted the Jenkins agents so tonight's builds go through."),)),
        T("python-version", "Which Python version do our services target?", "decision", (
            ("2024-01-10", "Python 3.10", "Services target Python 3.10."),
            ("2024-02-20", "Python 3.12", "From Monday we build every service against Python 3.12, not 3.10."))),
        T("review-approvals", "How many approvals does a pull request need?", "protocol", (
            ("2024-01-10", "one", "A pull request needs one approval before merge."),
            ("2024-02-14", "two", "Two approvals per pull request from today; one is no longer enough."))),
        T("oncall-length", "How long is an on-call shift?", "protocol", (
            ("2024-01-12", "one week", "On-call shifts last one week."),
            ("2024-03-01", "two weeks", "We're stretching on-call shifts to two weeks."))),
        T("staging-db", "Which Postgres version runs staging?", "decision", (
            ("2024-01-15", "Postgres 14", "Staging runs Postgres 14."),
            ("2024-02-26", "Postgres 16", "Staging got upgraded: Postgres 16 replaces Postgres 14 there."))),
        T("code-freeze", "When is the code freeze for the spring release?", "plan", (
            ("2024-02-01", "March 20", "Code freeze for the spring release is March 20."),
            ("2024-03-06", "March 27", "Change of plan: the spring code freeze slips a week, to March 27."))),
    )),
    TeamSet("binding-lab", "biology lab", "dr-okafor", ("kim", "raj", "sofia"), (
        T("assay-buffer", "Which buffer do we use for the binding assays?", "protocol", (
            ("2024-01-09", "buffer X", "Use buffer X for all binding assays."),
            ("2024-02-12", "buffer Y", "Buffer Y replaces buffer X in the binding assays from today.")),
          notes=(("2024-01-25", "buffer X", "Made up two litres of buffer X for the binding runs."),
                 ("2024-02-12", "buffer X", "Left the buffer X stock on the second shelf for tomorrow's assays."))),
        T("wash-buffer", "Which buffer do we use for western blot washes?", "protocol", (
            ("2024-01-09", "TBST", "Western blot washes use TBST."),)),
        T("incubation-temp", "At what temperature do the binding plates incubate?", "protocol", (
            ("2024-01-09", "37 °C", "Binding plates incubate at 37 °C."),
            ("2024-03-04", "30 °C", "Incubate the binding plates at 30 °C now, not 37 °C."))),
        T("plate-reader", "Which plate reader do we read plates on?", "instruction", (
            ("2024-01-16", "SpectraMax", "Read all plates on the SpectraMax."),
            ("2024-02-26", "CLARIOstar", "No more SpectraMax; use the CLARIOstar for every plate read."))),
        T("gel-stain", "Which stain do we use for agarose gels?", "protocol", (
            ("2024-01-16", "ethidium bromide", "Stain agarose gels with ethidium bromide."),
            ("2024-02-05", "SYBR Safe", "We stopped using ethidium bromide; gels get SYBR Safe.")),
          notes=(("2024-02-05", "ethidium bromide", "Topped up the ethidium bromide bottle by the gel bench."),)),
        T("antibody-supplier", "Which supplier do we order antibodies from?", "decision", (
            ("2024-01-23", "Abcam", "Antibodies are ordered from Abcam."),
            ("2024-03-11", "Cell Signaling", "Going forward antibodies come from Cell Signaling instead of Abcam."))),
        T("sample-storage", "Where are the protein samples stored?", "protocol", (
            ("2024-01-09", "-20 °C freezer", "Protein samples go in the -20 °C freezer."),
            ("2024-02-19", "-80 °C freezer", "Protein samples move to the -80 °C freezer starting this week.")),
          notes=(("2024-02-01", "-20 °C freezer", "Put the new lysates in the -20 °C freezer, rack 3."),)),
        T("lab-meeting", "When is the lab meeting?", "decision", (
            ("2024-01-09", "Wednesdays at 14:00", "Lab meeting is on Wednesdays at 14:00."),
            ("2024-03-04", "Thursdays at 11:00", "Lab meeting moves to Thursdays at 11:00."))),
    )),
    TeamSet("synthesis-lab", "chemistry lab", "dr-lindqvist", ("omar", "yuki", "pat"), (
        T("starting-compound", "Which compound do the synthesis runs start from?", "protocol", (
            ("2024-04-02", "Compound A", "The synthesis runs start from Compound A."),
            ("2024-05-06", "Compound B", "We're dropping Compound A; the synthesis runs use Compound B from now on.")),
          notes=(("2024-04-15", "Compound A", "Weighed out 5 g of Compound A for Thursday's run."),
                 ("2024-05-06", "Compound A", "Ordered more Compound A for next week's synthesis run."))),
        T("extraction-solvent", "Which solvent do we use for extractions?", "protocol", (
            ("2024-04-02", "dichloromethane", "Extractions use dichloromethane."),
            ("2024-05-13", "ethyl acetate", "Switching the extractions to ethyl acetate instead of dichloromethane."))),
        T("reagent-supplier", "Which supplier do we buy reagents from?", "decision", (
            ("2024-04-02", "Sigma-Aldrich", "Reagents are bought from Sigma-Aldrich."),
            ("2024-04-22", "TCI", "TCI replaces Sigma-Aldrich as our reagent supplier from today."),
            ("2024-06-03", "Fisher", "Reagents come from Fisher now; we stopped ordering from TCI."))),
        T("coupling-scale", "At what scale do we run the coupling reaction?", "plan", (
            ("2024-04-09", "1 g", "Run the coupling reaction at 1 g scale."),
            ("2024-05-20", "5 g", "From Monday we scale the coupling reaction up to 5 g."))),
        T("hood-checks", "How often are the fume hoods checked?", "protocol", (
            ("2024-04-02", "weekly", "Fume hoods get checked weekly."),
            ("2024-05-06", "daily", "Fume hood checks happen daily now, not weekly."))),
        T("product-purity", "What purity must final products reach?", "protocol", (
            ("2024-04-02", "95%", "Final products must be at least 95% pure by HPLC."),)),
        T("waste-pickup", "Which day is solvent waste picked up?", "decision", (
            ("2024-04-09", "Friday", "Solvent waste gets picked up on Fridays."),
            ("2024-06-03", "Tuesday", "Waste pickup moved to Tuesdays."))),
    )),
    TeamSet("product-squad", "product team", "jo", ("ines", "marc", "wen"), (
        T("standup-time", "What time is stand-up?", "decision", (
            ("2024-01-08", "9:30", "Stand-up is at 9:30 every day."),
            ("2024-02-12", "10:00", "Moving stand-up to 10:00 starting Monday.")),
          notes=(("2024-01-20", "9:30", "Reminder to self: dial in at 9:30 for stand-up."),)),
        T("mobile-standup", "What time is the mobile team's stand-up?", "decision", (
            ("2024-01-08", "9:00", "The mobile team's stand-up is at 9:00."),)),
        T("sprint-length", "How long is a sprint?", "plan", (
            ("2024-01-08", "two weeks", "Sprints are two weeks long."),
            ("2024-03-04", "three weeks", "We're trying three-week sprints instead of two-week ones from this cycle."))),
        T("tracker", "Which tool do we track work in?", "decision", (
            ("2024-01-08", "Jira", "We track all work in Jira."),
            ("2024-02-19", "Linear", "We stopped using Jira; all tickets live in Linear.")),
          notes=(("2024-02-19", "Jira", "Filed the onboarding bugs in Jira for the sprint."),)),
        T("checkout-launch", "When does the new checkout launch?", "plan", (
            ("2024-01-15", "May 3", "The new checkout launches on May 3."),
            ("2024-03-11", "May 17", "Launch for the new checkout pushed to May 17 (was May 3)."))),
        T("design-review", "Which day is design review?", "decision", (
            ("2024-01-10", "Thursday", "Design review happens on Thursdays."),
            ("2024-02-26", "Tuesday", "Design review is on Tuesdays from now on; Thursdays are done."))),
        T("retro", "When is the retro?", "decision", (
            ("2024-01-08", "the last Friday of each sprint", "Retro is the last Friday of each sprint."),)),
        T("beta-audience", "Who gets the beta first?", "plan", (
            ("2024-01-22", "internal staff", "The beta goes to internal staff first."),
            ("2024-03-04", "ten pilot customers", "Change of plan: ten pilot customers get the beta first, not internal staff."))),
    )),
    TeamSet("data-eng", "data engineering", "priya", ("ben", "lucia", "ravi"), (
        T("warehouse", "Which warehouse do we load data into?", "decision", (
            ("2024-06-03", "Redshift", "We load everything into Redshift."),
            ("2024-07-15", "Snowflake", "Snowflake replaces Redshift as the warehouse from today."))),
        T("dashboards", "Which tool do we build dashboards in?", "decision", (
            ("2024-06-03", "Tableau", "Dashboards are built in Tableau."),
            ("2024-07-01", "Looker", "No more Tableau; new dashboards go in Looker."))),
        T("nightly-load", "What time does the nightly load start?", "decision", (
            ("2024-06-03", "02:00", "The nightly load starts at 02:00."),
            ("2024-06-24", "04:00", "The nightly load now kicks off at 04:00 instead of 02:00.")),
          notes=(("2024-06-24", "02:00", "Scheduled the backfill right after the 02:00 nightly load."),)),
        T("log-retention", "How long do we keep raw event logs?", "protocol", (
            ("2024-06-03", "90 days", "Raw event logs are kept for 90 days."),
            ("2024-08-05", "30 days", "We cut raw event log retention to 30 days (from 90)."))),
        T("churn-retrain", "How often is the churn model retrained?", "plan", (
            ("2024-06-10", "monthly", "The churn model gets retrained monthly."),
            ("2024-07-22", "weekly", "From next week the churn model retrains weekly rather than monthly."))),
        T("scheduler", "What runs our pipelines?", "decision", (
            ("2024-06-03", "cron", "Pipelines run as cron jobs."),
            ("2024-06-17", "Airflow", "We retired the cron jobs; pipelines run in Airflow."),
            ("2024-08-12", "Dagster", "Airflow is out, Dagster is in for all pipelines.")),
          notes=(("2024-07-01", "Airflow", "Added the new ingest DAG to Airflow."),)),
        T("pii-access", "Who approves access to PII tables?", "protocol", (
            ("2024-06-03", "the privacy officer", "Access to PII tables needs sign-off from the privacy officer."),)),
    )),
    TeamSet("support-desk", "customer support", "sam", ("aisha", "nils", "carla"), (
        T("support-hours", "What are the support hours?", "decision", (
            ("2024-09-02", "8:00–18:00", "Support hours are 8:00–18:00 on weekdays."),
            ("2024-10-07", "7:00–19:00", "Support hours widen to 7:00–19:00 from Monday."))),
        T("chat-hours", "What are the live chat hours?", "decision", (
            ("2024-09-02", "9:00–17:00", "Live chat runs 9:00–17:00 on weekdays."),)),
        T("escalation", "Where do urgent tickets get escalated?", "protocol", (
            ("2024-09-02", "email to the on-call lead", "Escalate urgent tickets by email to the on-call lead."),
            ("2024-09-23", "the #incidents Slack channel", "Urgent tickets go to the #incidents Slack channel now, instead of email.")),
          notes=(("2024-09-23", "email to the on-call lead", "Emailed the on-call lead about the outage ticket, as usual."),)),
        T("first-response", "What is the first-response target?", "protocol", (
            ("2024-09-02", "48 hours", "First response within 48 hours."),
            ("2024-10-14", "24 hours", "First-response target drops to 24 hours; 48 is no longer acceptable."))),
        T("refund-limit", "Up to what amount can agents refund without approval?", "protocol", (
            ("2024-09-02", "$50", "Agents can refund up to $50 without approval."),
            ("2024-11-04", "$100", "Agents may now refund up to $100 without approval, up from $50."))),
        T("handover", "When is the shift handover?", "decision", (
            ("2024-09-02", "17:30", "Shift handover at 17:30."),
            ("2024-10-07", "18:45", "Handover moves to 18:45 with the longer hours.")),
          notes=(("2024-09-16", "17:30", "Swapped my Thursday shift; I'll still be there for the 17:30 handover."),)),
        T("helpdesk-tool", "Which helpdesk tool are tickets handled in?", "decision", (
            ("2024-09-02", "Zendesk", "Tickets are handled in Zendesk."),
            ("2024-11-04", "Freshdesk", "We're leaving Zendesk; tickets are handled in Freshdesk from the 4th."))),
        T("email-signoff", "How do we sign off support emails?", "instruction", (
            ("2024-09-02", "the agent's first name", "Sign off every support email with the agent's first name."),)),
    )),
    # written in a later session to test a measure or a slot changed in plain words, labelled things ("Freezer A"),
    # and notes on the old slot; developed on (all three hash to dev)
    TeamSet("infra-ops", "operations", "dana", ("ops-eli", "ops-mei"), (
        T("backup-time", "When do backups run?", "decision", (
            ("2025-03-03", "02:00 UTC", "Backups run nightly at 02:00 UTC."),
            ("2025-03-13", "04:00 UTC", "Heads up: backups move to 04:00 UTC starting tonight.")),
          notes=(("2025-03-06", "02:00 UTC", "Checked last night's 02:00 backup, all green."),)),
        T("staging-rebuild", "When is staging rebuilt?", "decision", (
            ("2025-03-03", "every Sunday night", "Staging is rebuilt every Sunday night."),)),
        T("secrets-store", "Where do secrets live?", "decision", (
            ("2025-03-03", "HashiCorp Vault", "Secrets live in HashiCorp Vault."),
            ("2025-03-23", "AWS Secrets Manager",
             "We're dropping Vault. Secrets go into AWS Secrets Manager going forward.")),
          notes=(("2025-03-23", "HashiCorp Vault", "Rotated the database password in Vault this morning."),)),
        T("alert-paging", "What pages the on-call engineer for production alerts?", "decision", (
            ("2025-03-03", "Opsgenie", "Production alerts page the on-call engineer through Opsgenie."),
            ("2025-03-28", "PagerDuty", "Opsgenie is being replaced by PagerDuty for all production alerts."))),
        T("log-retention", "How long are logs kept?", "protocol", (
            ("2025-03-15", "30 days", "Logs are kept for 30 days."),
            ("2025-04-02", "90 days", "Log retention is now 90 days, up from 30."))),
        T("staging-deploy-gate", "What do staging deploys need first?", "protocol", (
            ("2025-04-02", "a green test run", "Staging deploys need a green test run first."),)),
    )),
    TeamSet("growth-team", "growth marketing", "lena", ("gr-omar", "gr-ivy"), (
        T("metrics-review", "When is the weekly metrics review?", "decision", (
            ("2025-03-03", "Mondays at 11", "Weekly metrics review is on Mondays at 11."),
            ("2025-03-18", "Wednesdays at 11", "Metrics review is moving to Wednesdays, same time.")),
          notes=(("2025-03-08", "Mondays at 11", "Booked the room for Monday's 11:00 metrics review."),)),
        T("trial-length", "How long is the free trial?", "decision", (
            ("2025-03-03", "14 days", "The free trial lasts 14 days."),
            ("2025-03-25", "7 days", "Trial length cut to 7 days for new signups.")),
          notes=(("2025-03-25", "14 days", "Updated the onboarding email to say the trial is 14 days."),)),
        T("newsletter-day", "When does the newsletter go out?", "decision", (
            ("2025-03-03", "the first Tuesday of each month", "Newsletter goes out on the first Tuesday of each month."),)),
        T("north-star", "What is our primary metric?", "decision", (
            ("2025-03-03", "weekly active users", "Our primary KPI is weekly active users."),
            ("2025-04-02", "paid conversions",
             "After the offsite we agreed: north-star metric is paid conversions, not WAU."))),
        T("experiment-tool", "Which tool runs landing page experiments?", "decision", (
            ("2025-03-18", "Optimizely", "Landing page experiments use Optimizely."),)),
    )),
    TeamSet("cell-lab", "cell biology lab", "dr-haas", ("cl-noor", "cl-jan"), (
        T("passage-interval", "How often are cells passaged?", "protocol", (
            ("2025-03-03", "every 3 days", "Cells are passaged every 3 days."),
            ("2025-03-11", "every 4 days", "Switching to passaging every 4 days to reduce stress on the cells.")),
          notes=(("2025-03-11", "every 3 days", "Passaged the HeLa line today, next one in 3 days."),)),
        T("freezer-b", "What is Freezer B for?", "instruction", (
            ("2025-03-03", "antibodies only", "Freezer B is for antibodies only."),)),
        T("freezer-a", "What does Freezer A hold?", "instruction", (
            ("2025-03-17", "enzymes and buffers", "Freezer A holds enzymes and buffers."),)),
        T("western-gels", "Which gels do western blots use?", "protocol", (
            ("2025-03-03", "10% gels", "Western blots use 10% gels."),
            ("2025-03-23", "12% gels", "Going with 12% gels for westerns from now on."))),
        T("lab-meeting", "When is lab meeting?", "decision", (
            ("2025-03-03", "Thursday at 4pm", "Lab meeting is Thursday at 4pm."),
            ("2025-03-29", "Friday at 3pm", "Lab meeting moved to Friday 3pm.")),
          notes=(("2025-03-29", "Thursday at 4pm", "Sent the agenda for Thursday's 4pm lab meeting."),)),
    )),
    # written in session 42, before any rule was changed for them, as a probe of wordings no rule was built on
    # (measured first as they were written; their split is the hash's, as every team's)
    TeamSet("mobile-app", "mobile software", "kofi", ("mob-ada", "mob-lin"), (
        T("release-cadence", "How often does the app ship?", "decision", (
            ("2025-05-05", "every two weeks", "We ship the app every two weeks."),
            ("2025-06-02", "weekly", "Release train is weekly starting next sprint; the biweekly cadence is retired.")),
          notes=(("2025-05-19", "every two weeks", "Tagged build 4.2 for the biweekly release."),)),
        T("crash-reporting", "Where do crash reports go?", "decision", (
            ("2025-05-05", "Crashlytics", "Crash reports go to Crashlytics."),
            ("2025-06-09", "Sentry", "Sentry has taken over crash reporting, Crashlytics is switched off.")),
          notes=(("2025-06-09", "Crashlytics", "Added the Crashlytics key to the staging config."),)),
        T("ios-floor", "What is the minimum supported iOS version?", "decision", (
            ("2025-05-05", "iOS 15", "Minimum supported iOS is 15."),
            ("2025-06-16", "iOS 16", "We raised the iOS floor to 16, so 15 is no longer supported."))),
        T("design-crit", "When is design review?", "decision", (
            ("2025-05-05", "Monday mornings", "Design review happens Monday mornings."),
            ("2025-05-26", "Wednesday afternoons", "Design crit is Wednesday afternoons now (was Monday mornings)."))),
        T("feature-flags", "Where are feature flags managed?", "decision", (
            ("2025-05-12", "LaunchDarkly", "Feature flags are managed in LaunchDarkly."),)),
    )),
    TeamSet("field-ecology", "ecology lab", "dr-moreno", ("fe-tui", "fe-ola"), (
        T("river-sampling", "Which day are the river sites sampled?", "protocol", (
            ("2025-04-07", "Mondays", "We sample the river sites every Monday."),
            ("2025-05-05", "Tuesdays", "River sampling shifts to Tuesdays because of the lock closures.")),
          notes=(("2025-05-05", "Mondays", "Packed the cooler for Monday's river run."),)),
        T("gps-units", "Which units record plot coordinates?", "protocol", (
            ("2025-04-07", "the Garmin units", "Use the Garmin units for plot coordinates."),
            ("2025-04-28", "Trimble handhelds",
             "Plot coordinates: Trimble handhelds from now on, the Garmins go back to storage."))),
        T("preservative", "What are invertebrate samples preserved in?", "protocol", (
            ("2025-04-07", "70% ethanol", "Invertebrate samples are preserved in 70% ethanol."),
            ("2025-05-19", "95% ethanol", "Invertebrate samples: switch to 95% ethanol so DNA work stays possible.")),
          notes=(("2025-04-21", "70% ethanol", "Topped up the 70% ethanol jars for the invert samples."),)),
        T("field-data", "Where are field sheets entered?", "decision", (
            ("2025-04-07", "the Access database", "Field sheets are entered into the Access database."),
            ("2025-05-12", "the shared Postgres instance",
             "Access is retired. Field sheets go into the shared Postgres instance now."))),
        T("wader-cleaning", "How are waders cleaned between sites?", "protocol", (
            ("2025-04-07", "bleach solution", "Waders are rinsed with bleach solution after every site."),)),
        T("quadrat-size", "How big are vegetation quadrats?", "protocol", (
            ("2025-04-07", "1 m by 1 m", "Vegetation quadrats are 1 m by 1 m."),
            ("2025-05-26", "2 m by 2 m", "Quadrats are 2 m by 2 m as of this season."))),
    )),
    TeamSet("finance-ops", "finance operations", "ruth", ("fin-abe", "fin-zoe"), (
        T("expense-tool", "Where are expenses filed?", "decision", (
            ("2025-02-03", "Concur", "Expenses are filed in Concur."),
            ("2025-03-03", "Expensify", "Concur's contract ended; file expenses in Expensify.")),
          notes=(("2025-03-03", "Concur", "Submitted my February receipts in Concur."),)),
        T("approval-threshold", "Above what amount does a purchase need a manager's approval?", "protocol", (
            ("2025-02-03", "$500", "Purchases over $500 need a manager's approval."),
            ("2025-03-17", "$1,000", "The manager-approval threshold went up to $1,000."))),
        T("month-end-close", "By which business day is the month-end close done?", "plan", (
            ("2025-02-03", "the 5th business day", "Month-end close finishes on the 5th business day."),
            ("2025-04-01", "the 3rd business day",
             "We're closing the books by the 3rd business day from this quarter on."))),
        T("payment-runs", "When do vendor payments go out?", "decision", (
            ("2025-02-03", "every Thursday", "Vendor payments go out every Thursday."),
            ("2025-03-10", "Tuesdays and Fridays", "Payment runs happen Tuesdays and Fridays now."))),
        T("invoice-po", "What does an invoice need before it is paid?", "protocol", (
            ("2025-02-03", "a PO number", "Invoices need a PO number before they're paid."),)),
    )),
)
