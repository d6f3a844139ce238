package dbsqlc

// StageIntakeSQL is StageIntake's statement, for a caller that gives its
// fifteen parameters in binary form itself (payment's stageIntake: a
// chunk's arrays of 10,000 values each).
const StageIntakeSQL = stageIntake
