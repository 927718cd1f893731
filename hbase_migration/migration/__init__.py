"""A migration run, the top room: its parameters (`runspec`, `plans`), what preflight refuses (`preflight`,
`checks`, `preflight_security`, `peer_checks`), target tables and their schemas (`tables`, `schema`), the oldWALs quota
(`quota`), sizing (`sizing`, `sizing_probe`, `region_metrics`), freeze and cut-over (`freeze`, `cutover`), the
scheduled watch's health and its alerts (`health`, `alerts`).
"""
