package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/server/common/config"
	tlog "go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	v12 "go.temporal.io/server/schema/postgresql/v12"
	toolschema "go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// Postgres keeps the server's data in PostgreSQL, with Temporal's own SQL
// persistence plugin and schema: Database for the workflows and
// Database_visibility for the lists, both created on the server URL points
// at when absent.
type Postgres struct {
	// URL is a connection string (URL or keyword/value) to any database of
	// the server, as a role that may create databases.
	URL string
	// Database is the name of the main database (default "temporal").
	Database string
	// StatePath is where the files kept beside the store go (the ports it
	// ran on, its task-queue partitions), as StatePath.ports.json and
	// StatePath.partitions; empty keeps none.
	StatePath string
	// MaxConns caps each of the two connection pools (default 20).
	MaxConns int
}

func (p *Postgres) names() (main, visibility string) {
	main = p.Database
	if main == "" {
		main = "temporal"
	}
	return main, main + "_visibility"
}

// sqlConfigs are the plugin's settings for the two databases.
func (p *Postgres) sqlConfigs() (main, visibility *config.SQL, err error) {
	cc, err := pgconn.ParseConfig(p.URL)
	if err != nil {
		return nil, nil, errors.New("temporal: the PostgreSQL connection string for the embedded Temporal is not valid")
	}
	maxConns := p.MaxConns
	if maxConns <= 0 {
		maxConns = 20
	}
	attrs := map[string]string{"sslmode": "disable"}
	addr := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	if strings.HasPrefix(cc.Host, "/") {
		// A socket directory: the DSN's query overrides its host.
		attrs["host"] = cc.Host
		addr = net.JoinHostPort("localhost", strconv.Itoa(int(cc.Port)))
	} else if cc.TLSConfig != nil {
		delete(attrs, "sslmode")
	}
	mainDB, visDB := p.names()
	mk := func(db string, conns int) *config.SQL {
		a := make(map[string]string, len(attrs))
		for k, v := range attrs {
			a[k] = v
		}
		return &config.SQL{
			PluginName: pgplugin.PluginNamePGX, DatabaseName: db, ConnectAddr: addr, ConnectProtocol: "tcp",
			User: cc.User, Password: cc.Password, ConnectAttributes: a,
			MaxConns: conns, MaxIdleConns: conns,
		}
	}
	return mk(mainDB, maxConns), mk(visDB, max(2, maxConns/2)), nil
}

// setupPostgres creates the two databases and their schemas when absent,
// and brings an existing schema up to this server's version. created
// reports a new main database.
func setupPostgres(ctx context.Context, p *Postgres) (created bool, err error) {
	mainDB, visDB := p.names()
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return false, fmt.Errorf("temporal: connect to PostgreSQL for the embedded Temporal: %w", err)
	}
	defer conn.Close(context.Background())
	for _, db := range []string{mainDB, visDB} {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
			return false, fmt.Errorf("temporal: look up database %s: %w", db, err)
		}
		if exists {
			continue
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			return false, fmt.Errorf("temporal: create database %s: %w", db, err)
		}
	}
	mainCfg, visCfg, err := p.sqlConfigs()
	if err != nil {
		return false, err
	}
	created, err = setupSchema(mainCfg, "postgresql/v12/temporal", v12.Version)
	if err != nil {
		return false, err
	}
	if _, err := setupSchema(visCfg, "postgresql/v12/visibility", v12.VisibilityVersion); err != nil {
		return false, err
	}
	return created, nil
}

// setupSchema loads Temporal's schema into an empty database at version,
// or applies the versioned updates past the database's version.
func setupSchema(cfg *config.SQL, name, version string) (created bool, err error) {
	logger := tlog.NewNoopLogger()
	conn, err := sqltool.NewConnection(cfg, logger)
	if err != nil {
		return false, fmt.Errorf("temporal: connect to database %s: %w", cfg.DatabaseName, err)
	}
	defer conn.Close()
	tables, err := conn.ListTables()
	if err != nil {
		return false, fmt.Errorf("temporal: list the tables of %s: %w", cfg.DatabaseName, err)
	}
	if _, err := conn.ReadSchemaVersion(); err != nil {
		// No version: a new database, or a setup cut off before it wrote
		// the version (the server never ran on it, so it holds no data and
		// its tables are dropped and made again).
		task := toolschema.NewSetupSchemaTask(conn, &toolschema.SetupConfig{SchemaName: name, InitialVersion: version, Overwrite: len(tables) > 0}, logger)
		if err := task.Run(); err != nil {
			return false, fmt.Errorf("temporal: create schema %s in %s: %w", name, cfg.DatabaseName, err)
		}
		return true, nil
	}
	task := toolschema.NewUpdateSchemaTask(conn, &toolschema.UpdateConfig{DBName: cfg.DatabaseName, SchemaName: name}, logger)
	if err := task.Run(); err != nil {
		return false, fmt.Errorf("temporal: update schema %s in %s: %w", name, cfg.DatabaseName, err)
	}
	return false, nil
}
