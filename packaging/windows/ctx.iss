; Inno Setup script: wraps the one-dir bundle (dist\ctx) into a per-user installer with
; Start-menu entries, `ctx` on PATH and an uninstaller. The uninstaller first runs
; `ctx uninstall-integrations` (stops the app and its engine, removes the start-at-login
; Run value, agent hooks and MCP entries pointing at this install), stops what still runs
; from the install folder, takes the folder out of PATH, and says what it removed (a
; message box; with /VERYSILENT only in its log: /LOG=file).
;   iscc /DAppVersion=0.1.0 /DSourceDir=..\..\dist\ctx /DOutputDir=..\..\dist packaging\windows\ctx.iss
#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef SourceDir
  #define SourceDir "..\..\dist\ctx"
#endif
#ifndef OutputDir
  #define OutputDir "..\..\dist"
#endif

[Setup]
AppId={{6C7A1E0B-3F7D-4C55-9C1E-2B7E1C0D7A11}
AppName=ctx
AppVersion={#AppVersion}
AppPublisher=ctx
AppComments=Local context engine: encrypted memory for your AI assistant
DefaultDirName={localappdata}\Programs\ctx
DefaultGroupName=ctx
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=ctx-{#AppVersion}-windows-x64-setup
SetupIconFile=..\icons\ctx.ico
UninstallDisplayIcon={app}\ctx-app.exe
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
ChangesEnvironment=yes
CloseApplications=yes

[Tasks]
Name: "path"; Description: "Add the ctx command to PATH"; Flags: checkedonce
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\ctx"; Filename: "{app}\ctx-app.exe"; Comment: "The ctx tray app"
Name: "{group}\Uninstall ctx"; Filename: "{uninstallexe}"
Name: "{autodesktop}\ctx"; Filename: "{app}\ctx-app.exe"; Tasks: desktopicon

[Registry]
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; \
    ValueData: "{olddata};{app}"; Tasks: path; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\ctx-app.exe"; Description: "Start ctx now"; Flags: nowait postinstall skipifsilent

[Code]
var
  Report: string;

function NeedsAddPath(Dir: string): Boolean;
var
  Current: string;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
    Current := '';
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Current) + ';') = 0;
end;

procedure Say(Line: string);
begin
  Log(Line);
  Report := Report + Line + #13#10;
end;

// ctx's own undo step: what it set up outside its data dir, for this install only.
procedure UndoIntegrations();
var
  Code: Integer;
  ReportFile: string;
  Text: AnsiString;
begin
  ReportFile := ExpandConstant('{tmp}\ctx-uninstall.txt');
  if Exec(ExpandConstant('{app}\ctx.exe'),
          'uninstall-integrations --installed-at "' + ExpandConstant('{app}') +
          '" --report "' + ReportFile + '"', '', SW_HIDE, ewWaitUntilTerminated, Code) and
     LoadStringFromFile(ReportFile, Text) then
    Say(String(Text))
  else
    Say('ctx could not undo its integrations (exit code ' + IntToStr(Code) + ')');
  // Whatever still runs from the install folder (an engine of another data dir) would
  // keep its files locked: stop it.
  Exec(ExpandConstant('{sys}\WindowsPowerShell\v1.0\powershell.exe'),
       '-NoProfile -NonInteractive -Command "Get-Process | Where-Object { $_.Path -like ''' +
       ExpandConstant('{app}') + '\*'' } | Stop-Process -Force"',
       '', SW_HIDE, ewWaitUntilTerminated, Code);
end;

// The start-at-login value, if it still names this install (ctx removes it itself).
procedure RemoveRunValue();
var
  Value: string;
begin
  if RegQueryStringValue(HKCU, 'Software\Microsoft\Windows\CurrentVersion\Run', 'ctx', Value)
     and (Pos(Uppercase(ExpandConstant('{app}')), Uppercase(Value)) > 0) then
  begin
    RegDeleteValue(HKCU, 'Software\Microsoft\Windows\CurrentVersion\Run', 'ctx');
    Say('removed the start-at-login entry (HKCU\...\Run\ctx)');
  end;
end;

// The PATH entry the installer added (and only that one).
procedure RemovePathEntry();
var
  Current, Rest, Item, Kept, Dir: string;
  P: Integer;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Current) then
    exit;
  Dir := RemoveBackslashUnlessRoot(ExpandConstant('{app}'));
  Kept := '';
  Rest := Current + ';';
  while Rest <> '' do
  begin
    P := Pos(';', Rest);
    Item := Copy(Rest, 1, P - 1);
    Rest := Copy(Rest, P + 1, Length(Rest));
    if (Item <> '') and (CompareText(RemoveBackslashUnlessRoot(Item), Dir) <> 0) then
    begin
      if Kept <> '' then
        Kept := Kept + ';';
      Kept := Kept + Item;
    end;
  end;
  if Kept <> Current then
  begin
    RegWriteExpandStringValue(HKCU, 'Environment', 'Path', Kept);
    Say('removed ' + Dir + ' from PATH');
  end;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usUninstall then
  begin
    Report := '';
    UndoIntegrations();
    RemoveRunValue();
    RemovePathEntry();
  end
  else if (CurUninstallStep = usDone) and not UninstallSilent() then
    MsgBox('ctx is uninstalled.' + #13#10#13#10 + Report, mbInformation, MB_OK);
end;
