#!/bin/sh
# The fleet's scheduled backup (deploy/compose.yaml, service "backup"):
# every BACKUP_EVERY seconds, pg_dump of the Assay schema into a new
# folder under BACKUP_DIR, named for the UTC time, with the key secret
# beside it (the store's signing keys are sealed under it); the newest
# BACKUP_KEEP folders are kept, older ones removed. A dump that fails
# leaves no folder behind and is tried again at the next turn.
# Restore: pg_restore --no-owner --dbname=<a database URL> <folder>/assay.pgdump
# (docs/operators.md, "Backups, restores and upgrades").
# BACKUP_ONCE=1 makes one backup and exits (the test; a manual backup).
set -u
: "${BACKUP_DIR:=/backups}" "${BACKUP_EVERY:=21600}" "${BACKUP_KEEP:=28}" "${BACKUP_SCHEMA:=assay}"
: "${SECRETS_DIR:=/run/secrets}" "${BACKUP_ONCE:=}"
umask 077

backup() {
	name=$(date -u +%Y%m%dT%H%M%SZ)
	tmp="$BACKUP_DIR/.$name.partial"
	rm -rf "$tmp" && mkdir -p "$tmp" || return 1
	# PGHOST, PGPORT, PGUSER, PGDATABASE (and PGSSLMODE…) come from the
	# environment; the password from its secret, never a command line
	if ! PGPASSWORD=$(cat "$SECRETS_DIR/pg_password" 2>/dev/null) \
		pg_dump --format=custom --schema="$BACKUP_SCHEMA" --file="$tmp/assay.pgdump"; then
		rm -rf "$tmp"
		echo "backup $name: pg_dump failed; nothing kept, next try in ${BACKUP_EVERY}s" >&2
		return 1
	fi
	if [ -f "$SECRETS_DIR/keys_secret" ]; then
		cp "$SECRETS_DIR/keys_secret" "$tmp/keys.secret" || { rm -rf "$tmp"; return 1; }
	fi
	mv "$tmp" "$BACKUP_DIR/$name" || return 1
	echo "backup $name: $(wc -c <"$BACKUP_DIR/$name/assay.pgdump") bytes"
	# retention: the newest BACKUP_KEEP folders (names sort by time)
	ls -1 "$BACKUP_DIR" | grep -E '^[0-9]{8}T[0-9]{6}Z$' | sort -r | tail -n +"$((BACKUP_KEEP + 1))" |
		while read -r old; do rm -rf "${BACKUP_DIR:?}/$old"; done
}

while :; do
	backup
	status=$?
	[ -n "$BACKUP_ONCE" ] && exit "$status"
	sleep "$BACKUP_EVERY"
done
